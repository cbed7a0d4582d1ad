package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// testServer starts a one-server cluster on 127.0.0.1 and waits until it
// leads and can serve consistent reads.
func testServer(t *testing.T, opts ...func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeName = "solo"
	cfg.DataDir = t.TempDir()
	cfg.RPCPort, cfg.SerfPort = 0, 0
	cfg.GossipLocal = true
	cfg.Logger = testlog.Logger(t, "solo")
	for _, o := range opts {
		o(cfg)
	}
	s, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	deadline := time.Now().Add(20 * time.Second)
	for !(s.IsLeader() && s.readyForReads.Load()) {
		if time.Now().After(deadline) {
			t.Fatal("single server never became a ready leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// rpcCall calls s in process, as the test node's client: a request
// without a token carries testNodeSecret (ACLs off, any caller is
// management besides).
func rpcCall(t *testing.T, s *Server, method string, args, reply any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	withNodeSecret(args)
	return s.RPC(ctx, method, args, reply)
}

// seed registers a node running hostpath, a volume and a running alloc,
// whose group asks for the volume, holding a write claim on it.
func seed(t *testing.T, s *Server) {
	t.Helper()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &nresp))
	var vresp structs.CSIVolumeRegisterResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &vresp))
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{volumeAlloc("alloc-1", "node-1", structs.DefaultNamespace, 0, "data", false)}})
	must.NoError(t, err)
	var cresp structs.CSIVolumeClaimResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{
		VolumeID: "data", AllocationID: "alloc-1", Mode: structs.CSIVolumeClaimWrite}, &cresp))
	must.MapContainsKey(t, cresp.Volume.WriteClaims, "alloc-1")
}

func TestCSIVolume_Endpoints_BadInput(t *testing.T) {
	s := testServer(t)
	seed(t, s)
	before, err := s.State().LatestIndex()
	must.NoError(t, err)

	unknownPlugin := statetest.Volume("other", "no-such-plugin")
	changed := statetest.Volume("data", "hostpath")
	changed.ExternalID = "somewhere-else"
	cases := []struct {
		name     string
		method   string
		args     any
		reply    any
		code     error
		contains []string
	}{
		{"unknown plugin", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{unknownPlugin}},
			&structs.CSIVolumeRegisterResponse{}, structs.ErrBadRequest, []string{`"other"`, `"no-such-plugin"`}},
		{"immutable field", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{changed}},
			&structs.CSIVolumeRegisterResponse{}, structs.ErrConflict, []string{"external_id", "somewhere-else"}},
		{"invalid volume", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{{ID: "x"}}},
			&structs.CSIVolumeRegisterResponse{}, structs.ErrBadRequest, []string{`volume "x"`, "plugin_id"}},
		{"no volumes", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{},
			&structs.CSIVolumeRegisterResponse{}, structs.ErrBadRequest, []string{"no volume"}},
		{"deregister claimed", "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"data"}},
			&structs.CSIVolumeDeregisterResponse{}, structs.ErrConflict, []string{`"data"`, "alloc-1", "node-1"}},
		{"force deregister with live alloc", "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"data"}, Force: true},
			&structs.CSIVolumeDeregisterResponse{}, structs.ErrConflict, []string{"alloc-1"}},
		{"deregister missing", "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"nope"}},
			&structs.CSIVolumeDeregisterResponse{}, structs.ErrNotFound, []string{`"nope"`}},
		{"plugin in use", "CSIPlugin.Delete", &structs.CSIPluginDeleteRequest{ID: "hostpath"},
			&structs.CSIPluginDeleteResponse{}, structs.ErrConflict, []string{"hostpath", "node-1"}},
		{"claim for unknown alloc", "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{VolumeID: "data", AllocationID: "alloc-2", Mode: structs.CSIVolumeClaimWrite},
			&structs.CSIVolumeClaimResponse{}, structs.ErrNotFound, []string{"alloc-2"}},
		{"claim without alloc", "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{VolumeID: "data"},
			&structs.CSIVolumeClaimResponse{}, structs.ErrBadRequest, []string{`"data"`, "allocation"}},
		{"node without id", "Node.Register", &structs.NodeRegisterRequest{Node: &structs.Node{}},
			&structs.NodeUpdateResponse{}, structs.ErrBadRequest, []string{"node ID"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := rpcCall(t, s, tc.method, tc.args, tc.reply)
			must.ErrorIs(t, err, tc.code)
			for _, c := range tc.contains {
				must.StrContains(t, err.Error(), c)
			}
		})
	}
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("a rejected request writes nothing"))
}

func TestCSIVolume_Endpoints_SecondWriterRefused(t *testing.T) {
	s := testServer(t)
	seed(t, s)
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{volumeAlloc("alloc-2", "node-1", structs.DefaultNamespace, 0, "data", false)}})
	must.NoError(t, err)
	var resp structs.CSIVolumeClaimResponse
	err = rpcCall(t, s, "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{
		VolumeID: "data", AllocationID: "alloc-2", Mode: structs.CSIVolumeClaimWrite}, &resp)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "alloc-1")
}

func TestCSIVolume_Deregister_ForceAfterAllocStops(t *testing.T) {
	s := testServer(t)
	seed(t, s)
	_, _, err := raftApply[any](s, structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{
		Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusComplete}}, Timestamp: time.Now().UnixNano()})
	must.NoError(t, err)

	var resp structs.CSIVolumeDeregisterResponse
	err = rpcCall(t, s, "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"data"}}, &resp)
	must.ErrorIs(t, err, structs.ErrConflict, must.Sprint("without -force a claimed volume stays"))
	must.NoError(t, rpcCall(t, s, "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"data"}, Force: true}, &resp))

	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &get))
	must.Nil(t, get.Volume)
}

func TestCSIVolume_Get_NoSecrets(t *testing.T) {
	s := testServer(t)
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &nresp))
	vol := statetest.Volume("data", "hostpath")
	vol.Secrets = structs.CSISecrets{"token": "hunter2"}
	vol.MountOptions = &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"pass=hunter2"}}
	var vresp structs.CSIVolumeRegisterResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}, &vresp))

	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &get))
	must.Nil(t, get.Volume.Secrets)
	must.Eq(t, []string{structs.Redacted}, get.Volume.MountOptions.MountFlags)
	stored, err := s.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.MapEmpty(t, stored.Secrets, must.Sprint("secrets never reach raft in clear"))
	must.NotNil(t, stored.EncryptedSecrets)
	secrets, err := s.volumeSecrets(stored)
	must.NoError(t, err)
	must.Eq(t, "hunter2", secrets["token"], must.Sprint("the servers still open what plugins need"))
}

func TestNode_UpdateStatus_DownMakesVolumeUnschedulable(t *testing.T) {
	s := testServer(t)
	seed(t, s)
	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &get))
	must.True(t, get.Volume.Schedulable)

	// A blocking read waits for the change and sees it. Another write
	// (the leader's own, a fingerprint) may wake it first: it then
	// blocks again from what it saw, until it sees the node's.
	answers := make(chan structs.CSIVolumeGetResponse, 16)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		min := get.Index
		for ctx.Err() == nil {
			var resp structs.CSIVolumeGetResponse
			err := s.RPC(ctx, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data",
				QueryOptions: structs.QueryOptions{MinQueryIndex: min, MaxQueryTime: 20 * time.Second}}, &resp)
			if err != nil {
				resp.Volume = nil
			}
			answers <- resp
			if err != nil {
				return
			}
			min = resp.Index
		}
	}()
	var resp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown}, &resp))
	deadline := time.After(15 * time.Second)
	for seen := false; !seen; {
		select {
		case got := <-answers:
			must.NotNil(t, got.Volume)
			must.Greater(t, get.Index, got.Index)
			if got.Index < resp.Index {
				continue // woken by an earlier write
			}
			must.False(t, got.Volume.Schedulable, must.Sprint("a down node's plugin instances do not count"))
			must.Eq(t, 0, got.Volume.NodesHealthy)
			seen = true
		case <-deadline:
			t.Fatal("blocking query did not wake on the node going down")
		}
	}

	var plug structs.CSIPluginGetResponse
	must.NoError(t, rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath"}, &plug))
	must.Eq(t, 0, plug.Plugin.NodesHealthy)
	must.Eq(t, 1, plug.Plugin.NodesExpected)
}

func TestCSIPlugin_DeletedWhenLastNodeLeaves(t *testing.T) {
	s := testServer(t)
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)}, &nresp))
	must.NoError(t, rpcCall(t, s, "Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{"node-1"}}, &nresp))
	var list structs.CSIPluginListResponse
	must.NoError(t, rpcCall(t, s, "CSIPlugin.List", &structs.CSIPluginListRequest{}, &list))
	must.SliceEmpty(t, list.Plugins)
}

func TestRPC_UnknownMethodAndBadArgs(t *testing.T) {
	s := testServer(t)
	err := rpcCall(t, s, "CSIVolume.Nope", &structs.GenericRequest{}, &struct{}{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), "CSIVolume.Nope")

	// A wrong body over the network is rejected, and the server lives on.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.pool.Call(ctx, s.RPCAddr(), "CSIVolume.Register", []string{"not", "a", "request"}, &structs.CSIVolumeRegisterResponse{})
	must.Error(t, err)
	var e *structs.Error
	must.True(t, errors.As(err, &e))
	must.True(t, strings.Contains(err.Error(), "CSIVolume.Register"), must.Sprint(err.Error()))
	var leader string
	must.NoError(t, s.pool.Call(ctx, s.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leader))
	must.Eq(t, s.RPCAddr(), leader)
}
