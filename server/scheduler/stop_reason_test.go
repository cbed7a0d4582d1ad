package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// systemUpdateStopped runs a system job on two nodes, then a changed
// version, whose plan stops one node's old allocation; reword changes
// that stop before it is written. It returns the stopped allocation once
// its client reports it over.
func systemUpdateStopped(t *testing.T, w *world, reword func(*structs.AllocStop)) *structs.Allocation {
	t.Helper()
	w.node("node-1")
	w.node("node-2")
	v0 := systemJob("plugin")
	w.run(v0)
	w.runAll("plugin")
	w.clock.Advance(time.Minute)

	res, err := w.planner.Plan(w.st, changed(v0, "/bin/plugin-v2"), Run)
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Plan.Stops)
	must.EqOp(t, structs.AllocStopUpdate, res.Plan.Stops[0].Reason)
	must.EqOp(t, uint64(1), res.Plan.Stops[0].ReplacedByVersion)
	reword(&res.Plan.Stops[0])
	must.NoError(t, w.apply(res.Plan))
	old, err := w.st.AllocByID(nil, res.Plan.Stops[0].AllocID)
	must.NoError(t, err)
	w.clientStatus(old.ID, structs.AllocClientStatusComplete)
	return old
}

// TestPlanner_Update_SystemJobReadsTheReasonNotTheWords: a system job's
// rolling update counts a node whose old allocation an update replaced
// (over, its new one not placed yet) as in flight by the stop's reason
// and version: other words for the same stop change nothing, and words
// alone, without the reason, count for nothing.
func TestPlanner_Update_SystemJobReadsTheReasonNotTheWords(t *testing.T) {
	t.Run("other words, the same decision", func(t *testing.T) {
		w := newWorld(t)
		old := systemUpdateStopped(t, w, func(s *structs.AllocStop) { s.Description = "swapped for the new plugin build" })
		stored, err := w.st.AllocByID(nil, old.ID)
		must.NoError(t, err)
		must.EqOp(t, "swapped for the new plugin build", stored.DesiredDescription)

		res := w.auto("plugin")
		must.SliceLen(t, 1, res.Plan.Allocs)
		must.EqOp(t, old.NodeID, res.Plan.Allocs[0].NodeID)
		must.SliceEmpty(t, res.Plan.Stops, must.Sprint("the replacement is in flight: the other node waits"))
	})
	t.Run("the words without the reason", func(t *testing.T) {
		w := newWorld(t)
		systemUpdateStopped(t, w, func(s *structs.AllocStop) {
			s.Reason, s.ReplacedByVersion, s.Description = structs.AllocStopNone, 0, "swapped for the new plugin build"
		})
		res := w.auto("plugin")
		must.SliceLen(t, 1, res.Plan.Stops, must.Sprint("a stop with no reason is no update in flight"))
	})
}

// TestPlanner_Result_JobVersion: the result says the version the plan's
// job has once written: 0 for a new job, the stored one's for the same
// spec (or the leader's own pass), the next one for a changed spec; it is
// the version the state then stores.
func TestPlanner_Result_JobVersion(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	v0 := writerJob("web", "")
	must.EqOp(t, uint64(0), w.run(v0).JobVersion)
	must.EqOp(t, uint64(0), w.run(v0.Copy()).JobVersion)

	v1 := changed(v0, "/bin/v1")
	res, err := w.planner.Plan(w.st, v1, Run)
	must.NoError(t, err)
	must.EqOp(t, uint64(1), res.JobVersion)
	must.NoError(t, w.apply(res.Plan))
	stored, err := w.st.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.EqOp(t, res.JobVersion, stored.Version)
	must.EqOp(t, uint64(1), w.auto("web").JobVersion)
}
