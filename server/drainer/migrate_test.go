package drainer

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestInFlight_ReadsTheReasonNotTheWords: a migration in flight is an
// allocation stopped for a drain of its node since that drain began, as
// its stop reason says: other words for a drain's stop still count, a
// drain's words on another stop do not.
func TestInFlight_ReadsTheReasonNotTheWords(t *testing.T) {
	cases := []struct {
		name   string
		reason structs.AllocStopReason
		words  string
		busy   int
	}{
		{"a drain's stop in other words", structs.AllocStopDrain, "moved off for maintenance", 1},
		{"a drain's words on a job stop", structs.AllocStopJob, structs.DrainDescription("node-1"), 0},
		{"a drain's stop in its words", structs.AllocStopDrain, structs.DrainDescription("node-1"), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := statetest.New(t)
			must.NoError(t, st.UpsertNode(1, statetest.Node("node-1")))
			at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
			must.NoError(t, st.UpdateNodeDrain(2, &structs.NodeUpdateDrainRequest{NodeID: "node-1",
				DrainStrategy: structs.NewDrainStrategy(structs.DrainSpec{}, at)}))

			job := statetest.Job("web")
			job.TaskGroups[0].Count = 2
			a := statetest.Alloc("a0", "node-1")
			a.Job, a.JobID, a.Name = job, job.ID, "web.web[0]"
			a.DesiredStatus, a.StopReason, a.DesiredDescription = structs.AllocDesiredStatusStop, c.reason, c.words
			must.NoError(t, st.ApplyPlan(3, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{a}}))

			stored, err := st.JobByID(nil, structs.DefaultNamespace, "web")
			must.NoError(t, err)
			busy, err := inFlight(nil, st, stored, stored.LookupTaskGroup("web"), map[string]*structs.Node{})
			must.NoError(t, err)
			must.EqOp(t, c.busy, busy)
		})
	}
}
