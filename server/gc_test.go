package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// gcTick moves clk one GC interval on and waits until the leader's pass
// at that time is done: its loop waits for the next interval.
func gcTick(t *testing.T, clk *clocktest.Fake, interval time.Duration) {
	t.Helper()
	clk.AwaitTimer(t, clk.Now().Add(interval))
	clk.Advance(interval)
	clk.AwaitTimer(t, clk.Now().Add(interval))
}

func gcAllocExists(t *testing.T, s *Server, id string) bool {
	t.Helper()
	a, err := s.State().AllocByID(nil, id)
	must.NoError(t, err)
	return a != nil
}

func gcJobExists(t *testing.T, s *Server, id string) bool {
	t.Helper()
	j, err := s.State().JobByID(nil, "", id)
	must.NoError(t, err)
	return j != nil
}

func gcNodeExists(t *testing.T, s *Server, id string) bool {
	t.Helper()
	n, err := s.State().NodeByID(nil, id)
	must.NoError(t, err)
	return n != nil
}

// plainJob is a service job of one exec task, with no volume.
func plainJob(id string) *structs.Job {
	j := writerJob(id, "")
	j.TaskGroups[0].Volumes = nil
	j.TaskGroups[0].Tasks[0].VolumeMounts = nil
	return j
}

// TestGC_Loop_RemovesWhatAgedPastItsThreshold drives the leader's
// periodic collection with a fake clock (interval 5m; allocations 1h,
// jobs 2h, nodes 3h): a stopped job's allocation over on its client goes
// at the first pass an hour after it was seen over, not before; the job,
// left with no allocation, two hours after it was stopped; a node three
// hours after it went down. A ready node and a running job stay.
func TestGC_Loop_RemovesWhatAgedPastItsThreshold(t *testing.T) {
	const interval = 5 * time.Minute
	clk := clocktest.New()
	logs := &testlog.Recorder{}
	s := testServer(t, func(c *Config) {
		c.Logger = logs.Logger("solo")
		c.HeartbeatTTL = 10 * time.Minute // no client heartbeats: the nodes stay ready
		c.Clock = clk
		c.GCInterval = interval
		c.AllocGCThreshold = time.Hour
		c.JobGCThreshold = 2 * time.Hour
		c.NodeGCThreshold = 3 * time.Hour
	})
	// The loop has taken note of the store as it took office, before
	// anything below was written.
	clk.AwaitTimer(t, clk.Now().Add(interval))
	schedRegisterNode(t, s, statetest.NodeWithPlugin("node-1", "hostpath", false, true, true))
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: plainJob("web")}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	done := reg.Placed[0].ID
	var reg2 structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: plainJob("keeps-running")}, &reg2))
	must.SliceLen(t, 1, reg2.Placed)
	running := reg2.Placed[0].ID
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web"}, &structs.JobDeregisterResponse{}))
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: done, ClientStatus: structs.AllocClientStatusComplete}}}, &structs.GenericResponse{}))
	schedRegisterNode(t, s, statetest.Node("node-2"))
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-2", Status: structs.NodeStatusDown},
		&structs.NodeUpdateResponse{}))

	// The first pass, 5m on, is the first to see all of the above: ages
	// count from it.
	for range 12 {
		gcTick(t, clk, interval)
	}
	must.True(t, gcAllocExists(t, s, done), must.Sprint("55m after it was first seen over"))
	gcTick(t, clk, interval) // 1h after the first pass
	must.False(t, gcAllocExists(t, s, done), must.Sprint("an hour after it was seen over"))
	must.StrContains(t, logs.String(), "[INFO]  solo.server.gc: garbage collected: server=solo allocs=1 jobs=0 nodes=0 past_claims=0\n",
		must.Sprint("the leader logs what a pass removed"))
	must.True(t, gcJobExists(t, s, "web"), must.Sprint("stopped for less than 2h"))

	for range 11 {
		gcTick(t, clk, interval)
	}
	must.True(t, gcJobExists(t, s, "web"))
	gcTick(t, clk, interval)
	must.False(t, gcJobExists(t, s, "web"), must.Sprint("stopped 2h ago, with no allocation left"))
	must.True(t, gcNodeExists(t, s, "node-2"), must.Sprint("down for less than 3h"))

	for range 11 {
		gcTick(t, clk, interval)
	}
	must.True(t, gcNodeExists(t, s, "node-2"))
	gcTick(t, clk, interval)
	must.False(t, gcNodeExists(t, s, "node-2"), must.Sprint("down for 3h"))

	must.True(t, gcNodeExists(t, s, "node-1"), must.Sprint("ready"))
	must.True(t, gcJobExists(t, s, "keeps-running"))
	must.True(t, gcAllocExists(t, s, running))
}

// TestGC_HoldsAllocWhileItsClaimIsNotFreed: a manual collection keeps an
// allocation over on its client while its claim is being released (here
// the node detach fails: no client runs behind the node), and its stopped
// job with it; once the claim is freed (its node went down) both go, with
// the down node.
func TestGC_HoldsAllocWhileItsClaimIsNotFreed(t *testing.T) {
	s := schedWorld(t)
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("db", "data")}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	alloc := reg.Placed[0]
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "db"}, &structs.JobDeregisterResponse{}))
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: alloc.ID, ClientStatus: structs.AllocClientStatusComplete}}}, &structs.GenericResponse{}))

	var gc structs.SystemGCResponse
	must.NoError(t, rpcCall(t, s, "System.GarbageCollect", &structs.SystemGCRequest{}, &gc))
	must.Eq(t, structs.GCResult{}, gc.Removed)
	must.True(t, gcAllocExists(t, s, alloc.ID), must.Sprint("its claim is still releasing"))
	must.True(t, gcJobExists(t, s, "db"))
	vol, err := s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.PastClaims, alloc.ID)

	// Its node goes down: nothing to detach there, the claim is freed.
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: alloc.NodeID, Status: structs.NodeStatusDown},
		&structs.NodeUpdateResponse{}))
	deadline := time.Now().Add(20 * time.Second)
	for {
		vol, err = s.State().CSIVolumeByID(nil, "", "data")
		must.NoError(t, err)
		if !vol.InUse() {
			break
		}
		must.True(t, time.Now().Before(deadline), must.Sprintf("claim never freed: %+v", vol.PastClaims[alloc.ID]))
		time.Sleep(20 * time.Millisecond)
	}

	must.NoError(t, rpcCall(t, s, "System.GarbageCollect", &structs.SystemGCRequest{}, &gc))
	must.Eq(t, structs.GCResult{Allocs: 1, Jobs: 1, Nodes: 1}, gc.Removed)
	must.Positive(t, gc.Index)
	must.False(t, gcAllocExists(t, s, alloc.ID))
	must.False(t, gcJobExists(t, s, "db"))
	must.False(t, gcNodeExists(t, s, alloc.NodeID))
	other := "node-1"
	if alloc.NodeID == other {
		other = "node-2"
	}
	must.True(t, gcNodeExists(t, s, other), must.Sprint("ready"))
}

// TestGC_SystemGarbageCollect_NeedsManagement: with ACLs on, only a
// management token runs a collection; a token that may write everything
// else (operator, node, namespaces) is refused, as is an anonymous caller.
func TestGC_SystemGarbageCollect_NeedsManagement(t *testing.T) {
	s, mgmt := aclServer(t)
	writer := makeToken(t, s, mgmt, "writer", `
namespace "*" {
  policy = "write"
}
node {
  policy = "write"
}
operator {
  policy = "write"
}
`)
	for name, token := range map[string]string{"anonymous": "", "writer": writer} {
		err := callAs(t, s, token, "System.GarbageCollect", &structs.SystemGCRequest{}, &structs.SystemGCResponse{})
		must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint(name))
		must.StrContains(t, err.Error(), "management token")
	}
	var resp structs.SystemGCResponse
	must.NoError(t, callAs(t, s, mgmt, "System.GarbageCollect", &structs.SystemGCRequest{}, &resp))
	must.Positive(t, resp.Index)
}

// TestConfig_ValidateGC: the settings' errors name their keys.
func TestConfig_ValidateGC(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.GCInterval = 0
	cfg.NodeGCThreshold = -time.Second
	err := cfg.Validate()
	must.ErrorContains(t, err, "server: gc_interval must be positive, got 0s")
	must.ErrorContains(t, err, "server: node_gc_threshold must not be negative, got -1s")
}
