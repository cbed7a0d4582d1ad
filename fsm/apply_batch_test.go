package fsm

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestFSM_Apply_ClientBatches_EachOnItsOwn: a refused report or delta of
// a client batch writes nothing of its own and leaves the others applied,
// each answered with its own error.
func TestFSM_Apply_ClientBatches_EachOnItsOwn(t *testing.T) {
	f := newFSM(t)
	node := statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)
	other := statetest.NodeWithPlugin("node-1", "other", false, true, true).CSINodePlugins["other"]
	res := applyAll(t, f, []entry{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
		{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{
			statetest.Alloc("a1", "node-1"), statetest.Alloc("a2", "node-1")}}},
		{structs.AllocClientUpdateBatchRequestType, &structs.AllocClientUpdateBatchRequest{Updates: []structs.AllocClientUpdateRequest{
			{Timestamp: stamp.UnixNano(), Allocs: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}},
			// All or nothing: a2 is not written.
			{Timestamp: stamp.UnixNano(), Allocs: []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusFailed}, {}}},
		}}},
		{structs.NodeFingerprintBatchRequestType, &structs.NodeFingerprintBatchRequest{Fingerprints: []structs.NodeFingerprintRequest{
			{NodeID: "no-such-node", Plugins: []*structs.NodePluginUpdate{{PluginID: "other", Node: other}}},
			{NodeID: "node-1", Plugins: []*structs.NodePluginUpdate{{PluginID: "other", Node: other}}},
		}}},
	})

	errs, ok := res[2].([]error)
	must.True(t, ok, must.Sprintf("a batch answers []error, got %T", res[2]))
	must.SliceLen(t, 2, errs)
	must.NoError(t, errs[0])
	must.ErrorIs(t, errs[1], structs.ErrBadRequest)
	a1, err := f.State().AllocByID(nil, "a1")
	must.NoError(t, err)
	must.EqOp(t, structs.AllocClientStatusRunning, a1.ClientStatus)
	a2, err := f.State().AllocByID(nil, "a2")
	must.NoError(t, err)
	must.EqOp(t, uint64(2), a2.ModifyIndex, must.Sprint("the refused report wrote nothing"))

	errs, ok = res[3].([]error)
	must.True(t, ok, must.Sprintf("a batch answers []error, got %T", res[3]))
	must.SliceLen(t, 2, errs)
	must.ErrorIs(t, errs[0], structs.ErrNotFound)
	must.NoError(t, errs[1])
	got, err := f.State().NodeByID(nil, "node-1")
	must.NoError(t, err)
	must.MapContainsKey(t, got.CSINodePlugins, "other")
	must.EqOp(t, uint64(4), got.ModifyIndex)
}
