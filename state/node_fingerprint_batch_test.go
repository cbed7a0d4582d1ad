package state_test

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestStateStore_UpdateNodeFingerprintBatch: each delta is all or nothing
// on its own, answered with its own error, applied in order (a later
// delta of a node sees an earlier one's write), and a reader woken by the
// batch sees every applied delta of its index at once, never part of it.
func TestStateStore_UpdateNodeFingerprintBatch(t *testing.T) {
	info := func(nodeID, pluginID string) *structs.CSIInfo {
		return statetest.NodeWithPlugin(nodeID, pluginID, false, true, true).CSINodePlugins[pluginID]
	}
	event := func(msg string) []*structs.NodeEvent { return []*structs.NodeEvent{{Message: msg, Subsystem: "CSI"}} }

	for round := range 20 {
		s := statetest.New(t)
		n1 := statetest.NodeWithPlugin("n1", "a", true, true, true)
		must.NoError(t, s.UpsertNode(10, n1))
		must.NoError(t, s.UpsertNode(10, statetest.NodeWithPlugin("n2", "a", false, true, true)))
		ws := memdb.NewWatchSet()
		_, err := s.NodeByID(ws, "n1")
		must.NoError(t, err)

		reqs := []structs.NodeFingerprintRequest{
			// n1's controller side of a goes.
			{NodeID: "n1", Plugins: []*structs.NodePluginUpdate{{PluginID: "a", Node: n1.CSINodePlugins["a"]}}, Events: event("first")},
			{NodeID: "n2", Plugins: []*structs.NodePluginUpdate{{PluginID: "b", Node: info("n2", "b")}}},
			// The second entry has no plugin ID: c is not written either.
			{NodeID: "n1", Plugins: []*structs.NodePluginUpdate{{PluginID: "c", Node: info("n1", "c")}, {}}, Events: event("refused")},
			{NodeID: "nope", Plugins: []*structs.NodePluginUpdate{{PluginID: "d", Node: info("nope", "d")}}},
			{NodeID: "n1", Events: event("second")},
		}

		seen := make(chan int, 1)
		go func() {
			ws.Watch(nil)
			n := 0
			for _, id := range []string{"n1", "n2"} {
				if node, _ := s.NodeByID(nil, id); node != nil && node.ModifyIndex == 20 {
					n++
				}
			}
			if plug, _ := s.CSIPluginByID(nil, "b"); plug != nil {
				n++
			}
			seen <- n
		}()
		errs := s.UpdateNodeFingerprintBatch(20, reqs)
		must.EqOp(t, 3, <-seen, must.Sprintf("round %d: a woken reader sees the whole index", round))

		must.SliceLen(t, len(reqs), errs)
		for i, err := range errs {
			switch i {
			case 2:
				mustCode(t, structs.ErrBadRequest, err)
			case 3:
				mustCode(t, structs.ErrNotFound, err)
			default:
				must.NoError(t, err, must.Sprintf("delta %d", i))
			}
		}

		got, err := s.NodeByID(nil, "n1")
		must.NoError(t, err)
		must.MapNotContainsKey(t, got.CSIControllerPlugins, "a")
		must.MapNotContainsKey(t, got.CSINodePlugins, "c", must.Sprint("a refused delta writes nothing of itself"))
		var msgs []string
		for _, e := range got.Events {
			msgs = append(msgs, e.Message)
		}
		must.Eq(t, []string{"first", "second"}, msgs[len(msgs)-2:], must.Sprint("in order"))
		must.SliceNotContains(t, msgs, "refused")
		for id, want := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
			plug, err := s.CSIPluginByID(nil, id)
			must.NoError(t, err)
			must.EqOp(t, want, plug != nil, must.Sprintf("plugin %s", id))
		}
		must.MapEmpty(t, mustPlugin(t, s, "a").Controllers)
		must.EqOp(t, uint64(20), mustIndex(t, s, "nodes"))
		must.EqOp(t, uint64(20), mustIndex(t, s, "csi_plugins"))
	}
}

// TestStateStore_UpdateNodeFingerprintBatch_NothingApplied: a batch whose
// every delta is refused writes nothing, not even the index.
func TestStateStore_UpdateNodeFingerprintBatch_NothingApplied(t *testing.T) {
	s := statetest.New(t)
	must.NoError(t, s.UpsertNode(10, statetest.NodeWithPlugin("n1", "a", false, true, true)))
	errs := s.UpdateNodeFingerprintBatch(20, []structs.NodeFingerprintRequest{
		{NodeID: "nope"},
		{NodeID: "n1", Plugins: []*structs.NodePluginUpdate{nil}},
	})
	mustCode(t, structs.ErrNotFound, errs[0])
	mustCode(t, structs.ErrBadRequest, errs[1])
	idx, err := s.LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, uint64(10), idx)
}
