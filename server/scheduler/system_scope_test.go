package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// PlanNodes places a system job on the nodes given and on no other, and
// leaves the allocations elsewhere as they are.
func TestPlanNodes_PlacesOnlyOnTheNodesGiven(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	job := systemJob("sys")
	must.SliceLen(t, 2, w.run(job).Plan.Allocs)
	w.node("node-3")
	w.node("node-4")

	stored, err := w.st.JobByID(nil, structs.DefaultNamespace, "sys")
	must.NoError(t, err)
	res, err := w.planner.PlanNodes(w.st, stored, []string{"node-3", "node-1", "gone"})
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.Eq(t, "node-3", res.Plan.Allocs[0].NodeID)
	must.Eq(t, 1, res.Checks, must.Sprint("node-1 runs it already; gone is no node; node-4 is not asked"))
	must.SliceEmpty(t, res.Plan.Stops)
	must.SliceEmpty(t, res.Failures)
	must.NoError(t, w.apply(res.Plan))

	names := map[string]bool{}
	for _, a := range w.allocs("sys", live) {
		must.False(t, names[a.Name], must.Sprintf("name %s given twice", a.Name))
		names[a.Name] = true
	}
	must.MapLen(t, 3, names)
}

// A pass after nodes became ready plans the system jobs on those nodes
// only; a job written in the same pass is planned whole.
func TestJobWatcher_SystemJobsPlannedOnTheReadyNodes(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.run(systemJob("sys"))
	w.run(systemJob("other"))
	jw := newWatcher(t, w)
	pass(t, jw, false)

	w.node("node-2")
	w.node("node-3")
	again := systemJob("other")
	must.NoError(t, w.apply(&structs.PlanApplyRequest{Job: again, Timestamp: 1})) // written again, nothing placed
	todo, scopes, err := jw.changedJobs(w.st, map[string]bool{"nodes": true, "jobs": true})
	must.NoError(t, err)
	must.MapLen(t, 2, todo)
	must.Eq(t, []string{"node-2", "node-3"}, scopes[jobKey{structs.DefaultNamespace, "sys"}])
	_, whole := scopes[jobKey{structs.DefaultNamespace, "other"}]
	must.False(t, whole, must.Sprint("a job written is planned on every node"))

	must.Eq(t, []string{"other", "sys"}, pass(t, jw, false))
	must.SliceLen(t, 3, w.allocs("sys", live))
	must.SliceLen(t, 3, w.allocs("other", live))
}
