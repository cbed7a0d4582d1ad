package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestPlanner_Plan_NoNodeSaysWhy: with no node ready and eligible, the
// failure says what each registered node is (down, draining, ineligible)
// and how to undo what an operator did, rather than "no node is ready".
func TestPlanner_Plan_NoNodeSaysWhy(t *testing.T) {
	w := newWorld(t)
	res, err := w.planner.Plan(w.st, statetest.Job("plain"), Run)
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Failures)
	must.Eq(t, []string{"no node is registered; start a client agent (berth agent -client)"}, res.Failures[0].Reasons)

	for _, id := range []string{"node-1", "node-2", "node-3"} {
		w.node(id)
	}
	w.volume("data")
	w.nodeStatus("node-1", structs.NodeStatusDown)
	must.NoError(t, w.st.UpdateNodeDrain(w.next(), &structs.NodeUpdateDrainRequest{NodeID: "node-2", DrainStrategy: &structs.DrainStrategy{}}))
	must.NoError(t, w.st.UpdateNodeEligibility(w.next(), &structs.NodeUpdateEligibilityRequest{NodeID: "node-3", Eligibility: structs.NodeSchedulingIneligible}))

	res, err = w.planner.Plan(w.st, writerJob("writer", "data"), Run)
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Failures)
	must.Eq(t, []string{"no node is ready and eligible: of 3 nodes, 1 down, " +
		"1 draining (berth node drain -disable NODE ends a drain), " +
		"1 ineligible (berth node eligibility -enable NODE)"}, res.Failures[0].Reasons)

	// Once one is eligible again, the job is placed there.
	must.NoError(t, w.st.UpdateNodeEligibility(w.next(), &structs.NodeUpdateEligibilityRequest{NodeID: "node-3", Eligibility: structs.NodeSchedulingEligible}))
	res, err = w.planner.Plan(w.st, writerJob("writer", "data"), Run)
	must.NoError(t, err)
	must.SliceEmpty(t, res.Failures)
	must.Eq(t, "node-3", res.Plan.Allocs[0].NodeID)
}
