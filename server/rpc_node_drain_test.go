package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestNode_UpdateDrain_Refusals(t *testing.T) {
	s, _ := drainWorld(t)
	n := nodeNow(t, s, "node-1")
	cases := []struct {
		name string
		req  *structs.NodeUpdateDrainRequest
		want error
		says string
	}{
		{"no node id", &structs.NodeUpdateDrainRequest{DrainSpec: &structs.DrainSpec{}}, structs.ErrBadRequest, "missing the node ID"},
		{"unknown node", &structs.NodeUpdateDrainRequest{NodeID: "gone", DrainSpec: &structs.DrainSpec{}}, structs.ErrNotFound, "berth node status"},
		{"a step from a caller", &structs.NodeUpdateDrainRequest{NodeID: "node-1",
			Step: &structs.DrainStep{Complete: true}}, structs.ErrBadRequest, "send DrainSpec"},
		{"a strategy from a caller", &structs.NodeUpdateDrainRequest{NodeID: "node-1",
			DrainStrategy: &structs.DrainStrategy{}}, structs.ErrBadRequest, "servers' to set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := rpcCall(t, s, "Node.UpdateDrain", c.req, &structs.NodeDrainUpdateResponse{})
			must.ErrorIs(t, err, c.want)
			must.StrContains(t, err.Error(), c.says)
		})
	}
	// Cancelling no drain writes nothing.
	var resp structs.NodeDrainUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: "node-1"}, &resp))
	must.EqOp(t, n.ModifyIndex, resp.NodeModifyIndex)
	must.EqOp(t, n.ModifyIndex, nodeNow(t, s, "node-1").ModifyIndex)
}

// TestNode_UpdateEligibility_StopsPlacement: an ineligible node takes no
// new allocation (its system job's included) and keeps what it runs;
// marked eligible again, the job watcher places the system job there. A
// draining node cannot be marked eligible.
func TestNode_UpdateEligibility_StopsPlacement(t *testing.T) {
	s, _ := drainWorld(t)
	drainRegisterNode(t, s, "node-2")
	kept := registerJob(t, s, systemJobOf("before"))
	must.SliceLen(t, 2, kept)
	// Two allocations of a service group held on node-1 and migrated one
	// at a time: the second waits for the first's replacement, which
	// cannot be placed, so the drain below stays under way until it is
	// cancelled, whatever the drainer's speed.
	pinned := statetest2Job("pinned", 2)
	pinned.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1}
	pinned.Constraints = []*structs.Constraint{{Attribute: "${node.unique.id}", Operator: "=", Value: "node-1"}}
	must.SliceLen(t, 2, registerJob(t, s, pinned))
	setEligibility := func(node, e string) error {
		return rpcCall(t, s, "Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: node, Eligibility: e},
			&structs.NodeEligibilityUpdateResponse{})
	}
	must.NoError(t, setEligibility("node-1", structs.NodeSchedulingIneligible))
	n := nodeNow(t, s, "node-1")
	must.False(t, n.Schedulable())
	must.EqOp(t, "node marked ineligible for scheduling", n.Events[len(n.Events)-1].Message)

	sys := registerJob(t, s, systemJobOf("sys"))
	must.SliceLen(t, 1, sys)
	must.EqOp(t, "node-2", sys[0].NodeID)
	svc := statetest2Job("svc", 2)
	for _, a := range registerJob(t, s, svc) {
		must.EqOp(t, "node-2", a.NodeID)
	}
	must.SliceLen(t, 1, liveOn(t, s, "before", "node-1"), must.Sprint("what runs there keeps running"))

	must.NoError(t, setEligibility("node-1", structs.NodeSchedulingEligible))
	waitFor(t, "the system job placed on node-1", func() bool { return len(liveOn(t, s, "sys", "node-1")) == 1 })

	startDrain(t, s, "node-1", structs.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true})
	err := setEligibility("node-1", structs.NodeSchedulingEligible)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "berth node drain -disable node-1")
	must.ErrorIs(t, setEligibility("node-1", "sometimes"), structs.ErrBadRequest)
	must.ErrorIs(t, setEligibility("gone", structs.NodeSchedulingIneligible), structs.ErrNotFound)

	// A cancelled drain leaves the node ineligible.
	must.NoError(t, rpcCall(t, s, "Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: "node-1"}, &structs.NodeDrainUpdateResponse{}))
	n = nodeNow(t, s, "node-1")
	must.False(t, n.Draining())
	must.EqOp(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
	must.StrHasPrefix(t, "drain cancelled", n.Events[len(n.Events)-1].Message)
}

func statetest2Job(id string, count int) *structs.Job {
	j := systemJobOf(id)
	j.Type = structs.JobTypeService
	j.TaskGroups[0].Count = count
	return j
}
