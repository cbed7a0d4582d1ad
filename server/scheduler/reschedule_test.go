package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestPlanner_Reschedule_Service: a failed service allocation is replaced
// by the leader's pass once its delay is over (30 s, then doubling), on
// another node than the one it failed on; the replacement records the
// attempt and the allocation it replaces.
func TestPlanner_Reschedule_Service(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	first := w.run(writerJob("web", "")).Plan.Allocs[0]
	w.clientStatus(first.ID, structs.AllocClientStatusFailed)

	res := w.auto("web")
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("the delay is not over"))
	must.Eq(t, w.clock.Now().Add(30*time.Second), res.NextCheck)

	w.clock.Advance(30 * time.Second)
	res = w.auto("web")
	must.SliceLen(t, 1, res.Plan.Allocs)
	second := res.Plan.Allocs[0]
	must.NotEq(t, first.NodeID, second.NodeID, must.Sprint("another node when one fits"))
	must.EqOp(t, first.Name, second.Name, must.Sprint("it takes the failed one's place"))
	must.EqOp(t, first.ID, second.PreviousAllocation)
	must.SliceLen(t, 1, second.RescheduleEvents)
	must.EqOp(t, 30*time.Second, second.RescheduleEvents[0].Delay)
	must.SliceEmpty(t, w.auto("web").Plan.Allocs, must.Sprint("the failed one is replaced once"))

	w.clientStatus(second.ID, structs.AllocClientStatusFailed)
	res = w.auto("web")
	must.Eq(t, w.clock.Now().Add(time.Minute), res.NextCheck, must.Sprint("exponential: 60 s for the second"))
	w.clock.Advance(time.Minute)
	res = w.auto("web")
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.SliceLen(t, 2, res.Plan.Allocs[0].RescheduleEvents)
}

// TestPlanner_Reschedule_BatchAttempts: a batch allocation is replaced
// once in 24 h by default; one that fails again holds its place.
func TestPlanner_Reschedule_BatchAttempts(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	j := writerJob("batch", "")
	j.Type = structs.JobTypeBatch
	first := w.run(j).Plan.Allocs[0]
	w.clientStatus(first.ID, structs.AllocClientStatusFailed)
	w.clock.Advance(5 * time.Second)
	res := w.auto("batch")
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.EqOp(t, "node-1", res.Plan.Allocs[0].NodeID, must.Sprint("the node it failed on, when it is the only one"))

	w.clientStatus(res.Plan.Allocs[0].ID, structs.AllocClientStatusFailed)
	w.clock.Advance(time.Hour)
	res = w.auto("batch")
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("its one attempt in 24 h is used"))
	must.True(t, res.NextCheck.IsZero())
}

// TestPlanner_Reschedule_Policy: the group's block over the defaults:
// attempts are counted in the interval before the failure, as Nomad
// counts them.
func TestPlanner_Reschedule_Policy(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	j := writerJob("web", "")
	j.TaskGroups[0].Reschedule = &structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: time.Second, DelayFunction: structs.DelayConstant}
	a := w.run(j).Plan.Allocs[0]
	for i := 0; i < 2; i++ {
		w.clientStatus(a.ID, structs.AllocClientStatusFailed)
		w.clock.Advance(time.Second)
		res := w.auto("web")
		must.SliceLen(t, 1, res.Plan.Allocs, must.Sprintf("attempt %d", i+1))
		a = res.Plan.Allocs[0]
	}
	w.clientStatus(a.ID, structs.AllocClientStatusFailed)
	w.clock.Advance(time.Second)
	res := w.auto("web")
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("2 attempts in the hour before it failed are used"))
	must.True(t, res.NextCheck.IsZero(), must.Sprint("nothing to wait for: it stays failed (run the job again)"))
}

// TestReschedule_Bounds: an exponential delay without max_delay does not
// overflow, and an allocation that keeps failing carries a bounded
// history.
func TestReschedule_Bounds(t *testing.T) {
	p := structs.ReschedulePolicy{Delay: time.Second, DelayFunction: structs.DelayExponential, Unlimited: true}
	for _, n := range []int{0, 10, 40, 100} {
		must.Positive(t, p.DelayFor(n), must.Sprintf("after %d attempts", n))
	}
	must.EqOp(t, 1024*time.Second, p.DelayFor(10))

	w := newWorld(t)
	w.node("node-1")
	j := writerJob("web", "")
	j.TaskGroups[0].Reschedule = &structs.ReschedulePolicy{Unlimited: true, Delay: time.Second, DelayFunction: structs.DelayConstant}
	a := w.run(j).Plan.Allocs[0]
	for i := 0; i < structs.RescheduleEventsKept+3; i++ {
		w.clientStatus(a.ID, structs.AllocClientStatusFailed)
		w.clock.Advance(time.Second)
		res := w.auto("web")
		must.SliceLen(t, 1, res.Plan.Allocs)
		a = res.Plan.Allocs[0]
	}
	must.SliceLen(t, structs.RescheduleEventsKept, a.RescheduleEvents)
}
