package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func mustAlloc(t *testing.T, s *state.StateStore, id string) *structs.Allocation {
	t.Helper()
	a, err := s.AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a)
	return a
}

// TestApplyPlan_StopReason: a plan's stop writes its reason and version
// beside its words, whatever the words; a stop written before stops
// carried a reason gets the one its words of then meant; other words
// without a reason leave the allocation with none.
func TestApplyPlan_StopReason(t *testing.T) {
	s := statetest.New(t)
	job := statetest.Job("web")
	var allocs []*structs.Allocation
	for _, id := range []string{"a0", "a1", "a2", "a3"} {
		a := statetest.Alloc(id, "n1")
		a.Job, a.JobID, a.Name = job, job.ID, job.ID+".web["+id[1:]+"]"
		allocs = append(allocs, a)
	}
	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: job, Allocs: allocs}))

	reworded := structs.StopForUpdate("a0", 1)
	reworded.Description = "superseded by v1"
	count := structs.StopForCount("a3", 3)
	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "1"}
	must.NoError(t, s.ApplyPlan(11, &structs.PlanApplyRequest{Job: v1, Stops: []structs.AllocStop{
		reworded,
		{AllocID: "a1", Description: "replaced by job version 1"}, // a plan of a server before reasons
		{AllocID: "a2", Description: "moved"},
		count,
	}}))

	a0 := mustAlloc(t, s, "a0")
	must.EqOp(t, structs.AllocStopUpdate, a0.StopReason)
	must.EqOp(t, uint64(1), a0.ReplacedByVersion)
	must.EqOp(t, "superseded by v1", a0.DesiredDescription, must.Sprint("the words are for people, as given"))

	a1 := mustAlloc(t, s, "a1")
	must.EqOp(t, structs.AllocStopUpdate, a1.StopReason)
	must.EqOp(t, uint64(1), a1.ReplacedByVersion)
	must.EqOp(t, "replaced by job version 1", a1.DesiredDescription)

	a2 := mustAlloc(t, s, "a2")
	must.EqOp(t, structs.AllocDesiredStatusStop, a2.DesiredStatus)
	must.EqOp(t, structs.AllocStopNone, a2.StopReason)
	must.EqOp(t, "moved", a2.DesiredDescription)

	a3 := mustAlloc(t, s, "a3")
	must.EqOp(t, structs.AllocStopCount, a3.StopReason)
	must.EqOp(t, count.Description, a3.DesiredDescription)
}

// TestStopReason_DrainJobStopAndNodeDown: a drain step's stops say
// drain, a job stop's say job-stop, and a node that goes down marks its
// allocations lost without a reason of its own: one stopped before keeps
// its reason and words.
func TestStopReason_DrainJobStopAndNodeDown(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"), statetest.Node("n2"))
	a1, a2, other := statetest.Alloc("a1", "n1"), statetest.Alloc("a2", "n1"), statetest.Alloc("a3", "n2")
	a2.Name = statetest.JobID + ".web[1]"
	other.Name = statetest.JobID + ".web[2]"
	upsertAllocs(t, s, 11, a1, a2, other)
	must.NoError(t, s.UpsertJob(11, statetest.Job(statetest.JobID)))
	startDrain(t, s, 12, "n1", structs.DrainSpec{Deadline: time.Hour}, drainStart)
	must.NoError(t, s.UpdateNodeDrain(13, &structs.NodeUpdateDrainRequest{NodeID: "n1",
		Step: &structs.DrainStep{StartedAt: drainStart, StopAllocs: []string{"a1"}}}))
	got := mustAlloc(t, s, "a1")
	must.EqOp(t, structs.AllocStopDrain, got.StopReason)
	must.EqOp(t, structs.DrainDescription("n1"), got.DesiredDescription)

	must.NoError(t, s.UpdateNodeStatus(14, "n1", structs.NodeStatusDown, drainStart.UnixNano(), nil))
	got = mustAlloc(t, s, "a1")
	must.EqOp(t, structs.AllocClientStatusLost, got.ClientStatus)
	must.EqOp(t, structs.AllocStopDrain, got.StopReason, must.Sprint("stopped by the drain before its node went down"))
	got = mustAlloc(t, s, "a2")
	must.EqOp(t, structs.AllocClientStatusLost, got.ClientStatus)
	must.EqOp(t, structs.AllocStopNone, got.StopReason, must.Sprint("lost says it"))

	must.NoError(t, s.StopJob(15, "", statetest.JobID, false, drainStart))
	got = mustAlloc(t, s, "a3")
	must.EqOp(t, structs.AllocStopJob, got.StopReason)
	must.EqOp(t, structs.StopForJobStop().Description, got.DesiredDescription)
}

// TestStateStore_Restore_LegacyStopReason: a snapshot row of an
// allocation stopped before stops carried a reason gets the one its
// words meant; a row with a reason, or not stopped, is restored as it
// is; the row given is not changed.
func TestStateStore_Restore_LegacyStopReason(t *testing.T) {
	old := statetest.Alloc("a1", "n1")
	old.DesiredStatus, old.DesiredDescription = structs.AllocDesiredStatusStop, "replaced by job version 2"
	drained := statetest.Alloc("a2", "n1")
	drained.DesiredStatus, drained.DesiredDescription = structs.AllocDesiredStatusStop, "stopped to drain node n1"
	kept := statetest.Alloc("a3", "n1")
	kept.DesiredStatus, kept.DesiredDescription, kept.StopReason = structs.AllocDesiredStatusStop, "stopped to drain node n1", structs.AllocStopJob
	running := statetest.Alloc("a4", "n1")
	running.DesiredDescription = "replaced by job version 2"
	s := restored(t, map[string][]any{state.TableAllocs: {old, drained, kept, running}})

	got := mustAlloc(t, s, "a1")
	must.EqOp(t, structs.AllocStopUpdate, got.StopReason)
	must.EqOp(t, uint64(2), got.ReplacedByVersion)
	must.EqOp(t, structs.AllocStopNone, old.StopReason, must.Sprint("the row given is not changed"))
	must.EqOp(t, structs.AllocStopDrain, mustAlloc(t, s, "a2").StopReason)
	must.EqOp(t, kept, mustAlloc(t, s, "a3"), must.Sprint("a row with a reason is inserted as it is"))
	must.EqOp(t, running, mustAlloc(t, s, "a4"), must.Sprint("a row not stopped is inserted as it is"))
}

// TestStateStore_UpdateNodeDrain_EventsAreCopied: a drain write's events
// are copies (a change of the request's details later changes nothing
// stored), a nil one is skipped, the newest ten are kept, and the row
// read before the write keeps its own events.
func TestStateStore_UpdateNodeDrain_EventsAreCopied(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"))
	before := mustNode(t, s, "n1")
	beforeEvents := len(before.Events)
	details := map[string]string{"deadline": "1h"}
	var events []*structs.NodeEvent
	for i := range 12 {
		events = append(events, &structs.NodeEvent{Message: fmt.Sprintf("e%d", i), Details: details}, nil)
	}
	must.NoError(t, s.UpdateNodeDrain(11, &structs.NodeUpdateDrainRequest{NodeID: "n1",
		DrainStrategy: structs.NewDrainStrategy(structs.DrainSpec{}, drainStart), Events: events}))
	details["deadline"] = "changed"

	got := mustNode(t, s, "n1")
	must.SliceLen(t, 10, got.Events)
	must.EqOp(t, "e2", got.Events[0].Message)
	must.EqOp(t, "e11", got.Events[9].Message)
	for _, e := range got.Events {
		must.EqOp(t, "1h", e.Details["deadline"])
	}
	must.SliceLen(t, beforeEvents, before.Events, must.Sprint("the row read before is not changed"))
}
