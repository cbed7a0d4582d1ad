package server

import (
	"strconv"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// volumeAlloc returns a running alloc id on nodeID in namespace ns named
// for index idx, of a job whose group "web" asks for the csi volume source
// (per_alloc if perAlloc), or for no volume if source is "".
func volumeAlloc(id, nodeID, ns string, idx int, source string, perAlloc bool) *structs.Allocation {
	a := statetest.Alloc(id, nodeID)
	a.Namespace = ns
	a.Name = statetest.JobID + ".web[" + strconv.Itoa(idx) + "]"
	job := statetest.Job(statetest.JobID)
	job.Namespace = ns
	if source != "" {
		job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"vol": {Name: "vol", Type: "csi", Source: source, PerAlloc: perAlloc,
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}
	}
	a.Job = job
	return a
}

// placeAllocs writes allocs as a plan would.
func placeAllocs(t *testing.T, s *Server, allocs ...*structs.Allocation) {
	t.Helper()
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: allocs})
	must.NoError(t, err)
}

// registerSecretVolumes registers volumes of hostpath in namespace ns, each
// with a secret.
func registerSecretVolumes(t *testing.T, s *Server, mgmt, ns string, ids ...string) {
	t.Helper()
	var vols []*structs.CSIVolume
	for _, id := range ids {
		vol := statetest.Volume(id, "hostpath")
		vol.Namespace = ns
		vol.Secrets = structs.CSISecrets{"token": "secret-of-" + id}
		vols = append(vols, vol)
	}
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: vols,
		WriteRequest: structs.WriteRequest{Namespace: ns}}, &structs.CSIVolumeRegisterResponse{}))
}

func takeClaim(volID, ns, allocID, nodeID string) *structs.CSIVolumeClaimRequest {
	return &structs.CSIVolumeClaimRequest{VolumeID: volID, AllocationID: allocID, NodeID: nodeID,
		Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken,
		AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		WriteRequest: structs.WriteRequest{Namespace: ns}}
}

// TestNodeIdentity_ClaimOfAVolumeItsAllocDoesNotAskFor: a node's secret
// claims nothing for an alloc of another namespace, or whose group asks
// for no such volume, and gets no secrets: not by taking a claim, not by
// moving one along, not by publishing.
func TestNodeIdentity_ClaimOfAVolumeItsAllocDoesNotAskFor(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	registerSecretVolumes(t, s, mgmt, "prod", "prod-db")
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data")
	placeAllocs(t, s,
		volumeAlloc("no-volume", "node-1", structs.DefaultNamespace, 0, "", false),
		volumeAlloc("asks-prod-db", "node-1", structs.DefaultNamespace, 0, "prod-db", false))

	cases := []struct {
		name   string
		method string
		args   func() any
		want   string
	}{
		{"take, another namespace", "CSIVolume.Claim", func() any { return takeClaim("prod-db", "prod", "no-volume", "node-1") },
			"takes no claim of its own"},
		{"take, the namespace of the alloc", "CSIVolume.Claim", func() any { return takeClaim("data", "default", "no-volume", "node-1") },
			"takes no claim of its own"},
		{"release, another namespace", "CSIVolume.Claim", func() any {
			req := takeClaim("prod-db", "prod", "asks-prod-db", "node-1")
			req.State = structs.CSIVolumeClaimStateUnpublishing
			return req
		}, `alloc asks-prod-db on node node-1 is in namespace "default"`},
		{"release, not asked for", "CSIVolume.Claim", func() any {
			req := takeClaim("data", "default", "no-volume", "node-1")
			req.State = structs.CSIVolumeClaimStateUnpublishing
			return req
		}, "the group of alloc no-volume on node node-1 asks for no such volume"},
		{"publish, another namespace", "CSIVolume.Publish", func() any {
			return &structs.CSIVolumePublishRequest{VolumeID: "prod-db", AllocationID: "asks-prod-db", NodeID: "node-1",
				WriteRequest: structs.WriteRequest{Namespace: "prod"}}
		}, `volume "prod-db" in namespace "prod": alloc asks-prod-db on node node-1 is in namespace "default"`},
		{"publish, not asked for", "CSIVolume.Publish", func() any {
			return &structs.CSIVolumePublishRequest{VolumeID: "data", AllocationID: "no-volume", NodeID: "node-1"}
		}, "asks for no such volume"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.CSIVolumeClaimResponse
			err := callAs(t, s, testNodeSecret, tc.method, tc.args(), &resp)
			must.ErrorIs(t, err, structs.ErrPermissionDenied)
			must.StrContains(t, err.Error(), tc.want)
			must.MapEmpty(t, resp.NodeSecrets)
		})
	}
	for _, id := range []struct{ ns, vol string }{{"prod", "prod-db"}, {"default", "data"}} {
		vol, err := s.State().CSIVolumeByID(nil, id.ns, id.vol)
		must.NoError(t, err)
		must.MapEmpty(t, vol.WriteClaims, must.Sprintf("volume %s/%s", id.ns, id.vol))
		must.MapEmpty(t, vol.ReadClaims, must.Sprintf("volume %s/%s", id.ns, id.vol))
	}
}

// holdClaims writes a write claim of each alloc on its volume straight
// through raft, as the scheduler reserves them: no RPC caller may claim a
// volume for an alloc whose group does not ask for it.
func holdClaims(t *testing.T, s *Server, ns, nodeID string, volAlloc ...[2]string) {
	t.Helper()
	batch := &structs.CSIVolumeClaimBatchRequest{}
	for _, va := range volAlloc {
		batch.Claims = append(batch.Claims, *takeClaim(va[0], ns, va[1], nodeID))
	}
	errs, _, err := raftApply[[]error](s, structs.CSIVolumeClaimRequestType, batch)
	must.NoError(t, err)
	for i, err := range errs {
		must.NoError(t, err, must.Sprintf("claim of %v", volAlloc[i]))
	}
}

// TestNodeIdentity_PublishOnlyWhatTheGroupAsks: with a claim held (the
// scheduler's), a node's publish answers the volume's secrets only for a
// volume its alloc's group asks for, per_alloc volumes by the alloc's own
// index.
func TestNodeIdentity_PublishOnlyWhatTheGroupAsks(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data", "spare", "db[0]", "db[1]")
	placeAllocs(t, s,
		volumeAlloc("asks-data", "node-1", structs.DefaultNamespace, 0, "data", false),
		volumeAlloc("no-volume", "node-1", structs.DefaultNamespace, 0, "", false),
		volumeAlloc("per-alloc-1", "node-1", structs.DefaultNamespace, 1, "db", true))
	holdClaims(t, s, structs.DefaultNamespace, "node-1", [2]string{"data", "asks-data"}, [2]string{"spare", "no-volume"},
		[2]string{"db[1]", "per-alloc-1"}, [2]string{"db[0]", "per-alloc-1"})

	cases := []struct {
		name, vol, alloc, token string
		want                    error
	}{
		{"asked for", "data", "asks-data", testNodeSecret, nil},
		{"per_alloc, its own index", "db[1]", "per-alloc-1", testNodeSecret, nil},
		{"per_alloc, another index", "db[0]", "per-alloc-1", testNodeSecret, structs.ErrPermissionDenied},
		{"claimed, not asked for", "spare", "no-volume", testNodeSecret, structs.ErrPermissionDenied},
		{"another node's secret", "data", "asks-data", otherNodeSecret, structs.ErrPermissionDenied},
		{"unknown alloc", "data", "ghost", testNodeSecret, structs.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.CSIVolumeClaimResponse
			err := callAs(t, s, tc.token, "CSIVolume.Publish",
				&structs.CSIVolumePublishRequest{VolumeID: tc.vol, AllocationID: tc.alloc, NodeID: "node-1"}, &resp)
			if tc.want != nil {
				must.ErrorIs(t, err, tc.want)
				must.MapEmpty(t, resp.NodeSecrets)
				return
			}
			must.NoError(t, err)
			must.Eq(t, structs.CSISecrets{"token": "secret-of-" + tc.vol}, resp.NodeSecrets)
		})
	}
}

// TestCSIPlugin_Get_AllocsOfReadableNamespaces: a plugin's allocations are
// shown only in namespaces where the token may read jobs.
func TestCSIPlugin_Get_AllocsOfReadableNamespaces(t *testing.T) {
	s, mgmt := aclServer(t)
	for id, alloc := range map[string]string{"node-1": "plugin-default", "node-2": "plugin-prod"} {
		node := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
		node.CSINodePlugins["hostpath"].AllocID = alloc
		must.NoError(t, callAs(t, s, id+"-secret", "Node.Register", &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}))
	}
	placeAllocs(t, s,
		volumeAlloc("plugin-default", "node-1", structs.DefaultNamespace, 0, "", false),
		volumeAlloc("plugin-prod", "node-2", "prod", 0, "", false))
	pluginOnly := makeToken(t, s, mgmt, "plugin-reader", "plugin {\n  policy = \"read\"\n}\n")
	defaultReader := makeToken(t, s, mgmt, "default-reader",
		"plugin {\n  policy = \"read\"\n}\nnamespace \"default\" {\n  policy = \"read\"\n}\n")

	cases := []struct {
		name, token string
		want        []string
	}{
		{"plugin read only", pluginOnly, []string{}},
		{"read-job in default", defaultReader, []string{"plugin-default"}},
		{"management", mgmt, []string{"plugin-default", "plugin-prod"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.CSIPluginGetResponse
			must.NoError(t, callAs(t, s, tc.token, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath"}, &resp))
			must.NotNil(t, resp.Plugin)
			must.Eq(t, 2, resp.Plugin.NodesExpected, must.Sprint("the plugin itself is all there"))
			got := []string{}
			for _, a := range resp.Plugin.Allocations {
				got = append(got, a.ID)
			}
			must.Eq(t, tc.want, got)
		})
	}
}
