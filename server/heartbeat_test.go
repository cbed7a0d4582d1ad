package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func TestHeartbeat_MissedTTLMarksNodeDown(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 300 * time.Millisecond })
	seed(t, s)

	start := time.Now()
	deadline := start.Add(15 * time.Second)
	var node *structs.Node
	for {
		var err error
		node, err = s.State().NodeByID(nil, "node-1")
		must.NoError(t, err)
		if node.Status == structs.NodeStatusDown || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	must.Eq(t, structs.NodeStatusDown, node.Status, must.Sprint("a node that stops heartbeating is marked down"))
	t.Logf("figure: node marked down %s after its last heartbeat (TTL %s)", time.Since(start).Round(time.Millisecond), s.config.HeartbeatTTL)
	must.SliceNotEmpty(t, node.Events)
	must.StrContains(t, node.Events[len(node.Events)-1].Message, "missed its heartbeat")

	vol, err := s.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.False(t, vol.Schedulable, must.Sprint("the same write makes its volumes unschedulable"))

	// The client comes back: one heartbeat makes it ready and healthy again.
	var resp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}, &resp))
	must.Eq(t, s.config.HeartbeatTTL, resp.HeartbeatTTL)
	vol, err = s.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.True(t, vol.Schedulable)
}

func TestHeartbeat_UnchangedStatusWritesNothing(t *testing.T) {
	s := testServer(t)
	var resp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-1")}, &resp))
	before, err := s.State().LatestIndex()
	must.NoError(t, err)
	for i := 0; i < 5; i++ {
		must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}, &resp))
	}
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, before, after)

	err = rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "ghost", Status: structs.NodeStatusReady}, &resp)
	must.ErrorIs(t, err, structs.ErrNotFound)
}

func TestNode_UpdateFingerprint(t *testing.T) {
	s := testServer(t)
	var resp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-1")}, &resp))
	info := statetest.NodeWithPlugin("node-1", "hostpath", false, true, true).CSINodePlugins["hostpath"]
	must.NoError(t, rpcCall(t, s, "Node.UpdateFingerprint", &structs.NodeFingerprintRequest{NodeID: "node-1",
		Plugins: []*structs.NodePluginUpdate{{PluginID: "hostpath", Node: info}}}, &resp))
	var plug structs.CSIPluginGetResponse
	must.NoError(t, rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath"}, &plug))
	must.Eq(t, 1, plug.Plugin.NodesHealthy)
	must.Eq(t, "berth-hostpath", plug.Plugin.Provider)

	// A null entry is the caller's mistake, said so: not a panic, not a 500.
	err := rpcCall(t, s, "Node.UpdateFingerprint", &structs.NodeFingerprintRequest{NodeID: "node-1",
		Plugins: []*structs.NodePluginUpdate{nil}}, &resp)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, "carries no plugin ID")
}

// TestHeartbeat_TTLGrowsWithTheFleet: under a cap of 4.8 heartbeats a
// second (one a second for each node, which heartbeats 4.8 times a TTL)
// and a 2 s floor, the third node registered is told 3 s and the
// fourth 4 s (each counts itself among the fleet it joins), and so is a
// heartbeat once the four run: the TTL each write answers is the one its
// timer was reset with.
func TestHeartbeat_TTLGrowsWithTheFleet(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL, c.MaxHeartbeatsPerSecond = 2*time.Second, structs.HeartbeatsPerTTL })
	var resp structs.NodeUpdateResponse
	for i, want := range []time.Duration{2 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second} {
		id := []string{"node-1", "node-2", "node-3", "node-4"}[i]
		must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node(id)}, &resp))
		must.Eq(t, want, resp.HeartbeatTTL, must.Sprintf("the register of %s", id))
	}
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}, &resp))
	must.Eq(t, 4*time.Second, resp.HeartbeatTTL)
	must.Eq(t, 4*time.Second, s.heartbeatTTL("node-1"))
	must.Eq(t, 5*time.Second, s.heartbeatTTL("node-5"), must.Sprint("a fifth node would be told the fleet's TTL with it"))
}
