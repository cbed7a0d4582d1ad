package server

import (
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// attachRecorder is a client running a controller and node instance of
// hostpath: it confirms every volume and records the plugin node ID each
// ControllerPublish is for.
type attachRecorder struct {
	mu       sync.Mutex
	attached []string // ExternalNodeID of each attach, in order
}

func (a *attachRecorder) ControllerValidateVolume(_ *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	reply.Confirmed = true
	return nil
}

func (a *attachRecorder) ControllerAttachVolume(args *structs.ClientCSIControllerAttachVolumeRequest, reply *structs.ClientCSIControllerAttachVolumeResponse) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attached = append(a.attached, args.ExternalNodeID)
	reply.PublishContext = map[string]string{"device": "/dev/fake"}
	return nil
}

func (a *attachRecorder) ControllerDetachVolume(_ *structs.ClientCSIControllerDetachVolumeRequest, _ *structs.ClientCSIControllerDetachVolumeResponse) error {
	return nil
}

func (a *attachRecorder) NodeDetachVolume(_ *structs.ClientCSINodeDetachVolumeRequest, _ *structs.ClientCSINodeDetachVolumeResponse) error {
	return nil
}

func (a *attachRecorder) attaches() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string{}, a.attached...)
}

// claimOf returns alloc's claim on volume data in the default namespace,
// wherever it is, or nil.
func claimOf(t *testing.T, s *Server, allocID string) *structs.CSIVolumeClaim {
	t.Helper()
	vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	for _, m := range []map[string]*structs.CSIVolumeClaim{vol.WriteClaims, vol.ReadClaims, vol.PastClaims} {
		if c := m[allocID]; c != nil {
			return c
		}
	}
	return nil
}

// TestCSIVolume_Claim_OnlyForAnAllocThatAsks: whoever calls, a claim's
// alloc exists, is in the volume's namespace and its group asks for the
// volume; the volume is published to the node the servers know for the
// alloc's node, never one the caller names.
func TestCSIVolume_Claim_OnlyForAnAllocThatAsks(t *testing.T) {
	s, mgmt := aclServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	rec := &attachRecorder{}
	ConnectClient(t, s.RPCAddr(), rec) // node-1, whose plugin knows it as ext-node-1
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data")
	placeAllocs(t, s,
		volumeAlloc("asks-data", "node-1", structs.DefaultNamespace, 0, "data", false),
		volumeAlloc("no-volume", "node-1", structs.DefaultNamespace, 0, "", false),
		volumeAlloc("prod-alloc", "node-1", "prod", 0, "data", false))
	mount := makeToken(t, s, mgmt, "mount", "namespace \"default\" {\n  capabilities = [\"csi-mount-volume\"]\n}\n")

	claim := func(allocID string) *structs.CSIVolumeClaimRequest {
		req := takeClaim("data", structs.DefaultNamespace, allocID, "")
		req.ExternalNodeID = "attacker-vm"
		return req
	}
	for who, token := range map[string]string{"csi-mount-volume": mount, "management": mgmt} {
		for _, tc := range []struct {
			name, alloc string
			want        error
			msg         string
		}{
			{"an alloc of another namespace", "prod-alloc", structs.ErrPermissionDenied,
				`volume "data" in namespace "default": alloc prod-alloc on node node-1 is in namespace "prod"`},
			{"an alloc whose group does not ask for it", "no-volume", structs.ErrPermissionDenied,
				"the group of alloc no-volume on node node-1 asks for no such volume"},
			{"no such alloc", "ghost", structs.ErrNotFound, "alloc ghost not found"},
		} {
			err := callAs(t, s, token, "CSIVolume.Claim", claim(tc.alloc), &structs.CSIVolumeClaimResponse{})
			must.ErrorIs(t, err, tc.want, must.Sprint(who, ": ", tc.name))
			must.StrContains(t, err.Error(), tc.msg)
			must.Nil(t, claimOf(t, s, tc.alloc), must.Sprint(who, ": ", tc.name))
		}
	}
	must.SliceEmpty(t, rec.attaches(), must.Sprint("nothing published for a refused claim"))

	must.NoError(t, callAs(t, s, mount, "CSIVolume.Claim", claim("asks-data"), &structs.CSIVolumeClaimResponse{}))
	must.Eq(t, []string{"ext-node-1"}, rec.attaches(), must.Sprint("published to the node's plugin ID, not the caller's"))
	held := claimOf(t, s, "asks-data")
	must.NotNil(t, held)
	must.EqOp(t, "ext-node-1", held.ExternalNodeID)
}

// TestCSIVolume_Claim_ReleaseIsTheServersToDrive: a caller may ask for a
// claim to be released, never move it past unpublishing: a volume freed
// before its detaches are done would let a second writer claim it while
// still attached. The release then runs to freed at the servers' pace,
// whatever retry time the caller sends.
func TestCSIVolume_Claim_ReleaseIsTheServersToDrive(t *testing.T) {
	s, mgmt := aclServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	ConnectClient(t, s.RPCAddr(), &attachRecorder{})
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data")
	placeAllocs(t, s,
		volumeAlloc("first", "node-1", structs.DefaultNamespace, 0, "data", false),
		volumeAlloc("second", "node-1", structs.DefaultNamespace, 1, "data", false))
	mount := makeToken(t, s, mgmt, "mount", "namespace \"default\" {\n  capabilities = [\"csi-mount-volume\"]\n}\n")
	must.NoError(t, callAs(t, s, mount, "CSIVolume.Claim", takeClaim("data", structs.DefaultNamespace, "first", "node-1"),
		&structs.CSIVolumeClaimResponse{}))

	release := func(state structs.CSIVolumeClaimState) *structs.CSIVolumeClaimRequest {
		req := takeClaim("data", structs.DefaultNamespace, "first", "")
		req.State = state
		return req
	}
	for _, token := range []string{mount, mgmt, testNodeSecret} {
		for _, state := range []structs.CSIVolumeClaimState{structs.CSIVolumeClaimStateNodeDetached,
			structs.CSIVolumeClaimStateControllerDetached, structs.CSIVolumeClaimStateFreed} {
			err := callAs(t, s, token, "CSIVolume.Claim", release(state), &structs.CSIVolumeClaimResponse{})
			must.ErrorIs(t, err, structs.ErrBadRequest, must.Sprint(state))
			must.StrContains(t, err.Error(), "not moved to "+state.String())
			held := claimOf(t, s, "first")
			must.NotNil(t, held)
			must.EqOp(t, structs.CSIVolumeClaimStateTaken, held.State)
		}
	}
	err := callAs(t, s, mount, "CSIVolume.Claim", takeClaim("data", structs.DefaultNamespace, "second", "node-1"),
		&structs.CSIVolumeClaimResponse{})
	must.ErrorIs(t, err, structs.ErrConflict, must.Sprint("a second writer while the first still holds the volume"))

	req := release(structs.CSIVolumeClaimStateUnpublishing)
	req.NextAttemptAt = time.Now().Add(100 * 365 * 24 * time.Hour)
	req.LastError = "made up"
	must.NoError(t, callAs(t, s, mount, "CSIVolume.Claim", req, &structs.CSIVolumeClaimResponse{}))
	deadline := time.Now().Add(20 * time.Second)
	for claimOf(t, s, "first") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the claim was not freed: %+v", claimOf(t, s, "first"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	must.NoError(t, callAs(t, s, mount, "CSIVolume.Claim", takeClaim("data", structs.DefaultNamespace, "second", "node-1"),
		&structs.CSIVolumeClaimResponse{}))
}

// TestCSIVolume_Get_NodeReadsItsAllocsVolumes: a node's secret reads a
// volume that an alloc on the node asks for, stopped or not, in the
// alloc's namespace; any other volume needs csi-read-volume in its
// namespace.
func TestCSIVolume_Get_NodeReadsItsAllocsVolumes(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data", "spare", "other")
	registerSecretVolumes(t, s, mgmt, "prod", "prod-db")
	stopped := volumeAlloc("stopped", "node-1", structs.DefaultNamespace, 0, "spare", false)
	stopped.DesiredStatus, stopped.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete
	placeAllocs(t, s,
		volumeAlloc("asks-data", "node-1", structs.DefaultNamespace, 0, "data", false),
		volumeAlloc("asks-prod-db", "node-1", structs.DefaultNamespace, 0, "prod-db", false),
		stopped)
	defaultReader := makeToken(t, s, mgmt, "default-reader", "namespace \"default\" {\n  policy = \"read\"\n}\n")

	cases := []struct {
		name, token, ns, vol string
		ok                   bool
	}{
		{"its alloc's volume", testNodeSecret, "", "data", true},
		{"its stopped alloc's volume", testNodeSecret, "", "spare", true},
		{"a volume no alloc of it asks for", testNodeSecret, "", "other", false},
		{"another node's", otherNodeSecret, "", "data", false},
		{"asked for by an alloc of another namespace", testNodeSecret, "prod", "prod-db", false},
		{"csi-read-volume", defaultReader, "", "other", true},
		{"csi-read-volume, another namespace", defaultReader, "prod", "prod-db", false},
		{"management", mgmt, "prod", "prod-db", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.CSIVolumeGetResponse
			err := callAs(t, s, tc.token, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: tc.vol,
				QueryOptions: structs.QueryOptions{Namespace: tc.ns}}, &resp)
			if !tc.ok {
				must.ErrorIs(t, err, structs.ErrPermissionDenied)
				must.Nil(t, resp.Volume)
				return
			}
			must.NoError(t, err)
			must.NotNil(t, resp.Volume)
			must.EqOp(t, tc.vol, resp.Volume.ID)
			must.MapEmpty(t, resp.Volume.Secrets)
		})
	}
}
