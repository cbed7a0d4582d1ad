package state_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func TestStateStore_UpdateNodeFingerprint(t *testing.T) {
	st := statetest.New(t)
	node := statetest.NodeWithPlugin("n1", "a", true, true, true)
	b := statetest.NodeWithPlugin("n1", "b", false, true, true)
	node.CSINodePlugins["b"] = b.CSINodePlugins["b"]
	must.NoError(t, st.UpsertNode(10, node))

	// Only plugin a changes: its controller side goes away.
	must.NoError(t, st.UpdateNodeFingerprint(11, &structs.NodeFingerprintRequest{
		NodeID:  "n1",
		Plugins: []*structs.NodePluginUpdate{{PluginID: "a", Node: node.CSINodePlugins["a"]}},
		Events:  []*structs.NodeEvent{{Message: "controller stopped", Subsystem: "CSI"}},
	}))
	a, err := st.CSIPluginWithInstances(nil, "a")
	must.NoError(t, err)
	must.MapEmpty(t, a.Controllers)
	must.MapContainsKey(t, a.Nodes, "n1")
	must.Eq(t, 11, a.ModifyIndex)
	bp, err := st.CSIPluginByID(nil, "b")
	must.NoError(t, err)
	must.Eq(t, 10, bp.ModifyIndex, must.Sprint("a plugin the update does not name is not rewritten"))

	got, err := st.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.MapNotContainsKey(t, got.CSIControllerPlugins, "a")
	must.SliceLen(t, 1, got.Events)

	// The last instance of b goes: the plugin row goes with it.
	must.NoError(t, st.UpdateNodeFingerprint(12, &structs.NodeFingerprintRequest{
		NodeID: "n1", Plugins: []*structs.NodePluginUpdate{{PluginID: "b"}},
	}))
	bp, err = st.CSIPluginByID(nil, "b")
	must.NoError(t, err)
	must.Nil(t, bp)
	idx, err := st.Index("csi_plugins")
	must.NoError(t, err)
	must.Eq(t, 12, idx)
}

func TestStateStore_UpdateNodeFingerprint_BadInput(t *testing.T) {
	st := statetest.New(t)
	must.NoError(t, st.UpsertNode(10, statetest.NodeWithPlugin("n1", "a", false, true, true)))
	wrong := statetest.NodeWithPlugin("n1", "z", false, true, true).CSINodePlugins["z"]
	cases := []struct {
		name string
		req  *structs.NodeFingerprintRequest
		code error
	}{
		{"unknown node", &structs.NodeFingerprintRequest{NodeID: "nope"}, structs.ErrNotFound},
		{"no plugin id", &structs.NodeFingerprintRequest{NodeID: "n1", Plugins: []*structs.NodePluginUpdate{{}}}, structs.ErrBadRequest},
		{"mismatched id", &structs.NodeFingerprintRequest{NodeID: "n1", Plugins: []*structs.NodePluginUpdate{{PluginID: "a", Node: wrong}}}, structs.ErrBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.ErrorIs(t, st.UpdateNodeFingerprint(20, tc.req), tc.code)
			idx, err := st.LatestIndex()
			must.NoError(t, err)
			must.Eq(t, 10, idx, must.Sprint("a rejected update writes nothing"))
		})
	}
}

// TestStateStore_UpdateNodeFingerprint_PluginNotUp: a plugin whose node side
// has no NodeGetInfo answer yet (its socket is not there) is kept as
// unhealthy, with the reason; the node's other plugins in the same update
// are applied as they are.
func TestStateStore_UpdateNodeFingerprint_PluginNotUp(t *testing.T) {
	st := statetest.New(t)
	must.NoError(t, st.UpsertNode(10, statetest.Node("n1")))
	up := statetest.NodeWithPlugin("n1", "up", false, true, true).CSINodePlugins["up"]
	down := &structs.CSIInfo{PluginID: "down", Healthy: false, HealthDescription: "dial unix /x/csi.sock: no such file"}
	must.NoError(t, st.UpdateNodeFingerprint(11, &structs.NodeFingerprintRequest{NodeID: "n1",
		Plugins: []*structs.NodePluginUpdate{{PluginID: "down", Node: down}, {PluginID: "up", Node: up}}}))

	node, err := st.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.True(t, node.CSINodePlugins["up"].Healthy)
	must.False(t, node.CSINodePlugins["down"].Healthy)
	must.StrContains(t, node.CSINodePlugins["down"].HealthDescription, "NodeGetInfo")
	must.StrContains(t, node.CSINodePlugins["down"].HealthDescription, "no such file")
	plug, err := st.CSIPluginByID(nil, "up")
	must.NoError(t, err)
	must.EqOp(t, 1, plug.NodesHealthy)
	plug, err = st.CSIPluginWithInstances(nil, "down")
	must.NoError(t, err)
	must.EqOp(t, 0, plug.NodesHealthy)
	must.MapContainsKey(t, plug.Nodes, "n1", must.Sprint("listed, unhealthy, with its reason"))
}

// TestStateStore_UpsertNode_PluginNotUp: a node registering with a plugin
// that has not answered NodeGetInfo keeps it, unhealthy, beside the others.
func TestStateStore_UpsertNode_PluginNotUp(t *testing.T) {
	st := statetest.New(t)
	node := statetest.NodeWithPlugin("n1", "up", false, true, true)
	node.CSINodePlugins["down"] = &structs.CSIInfo{PluginID: "down", Healthy: true, HealthDescription: "healthy"}
	must.NoError(t, st.UpsertNode(10, node))
	got, err := st.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.True(t, got.CSINodePlugins["up"].Healthy)
	must.False(t, got.CSINodePlugins["down"].Healthy, must.Sprint("no node info: never healthy, whatever it claims"))
	must.StrContains(t, got.CSINodePlugins["down"].HealthDescription, "NodeGetInfo")
	must.True(t, node.CSINodePlugins["down"].Healthy, must.Sprint("the caller's node is not changed"))
	plug, err := st.CSIPluginByID(nil, "down")
	must.NoError(t, err)
	must.EqOp(t, 0, plug.NodesHealthy)
}
