package scheduler

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const testJobMaxCount = 100

// newWatcher is a job watcher over w's store and clock that writes its
// plans as the FSM would.
func newWatcher(t *testing.T, w *world, edit ...func(*JobWatcherConfig)) *JobWatcher {
	t.Helper()
	cfg := DefaultJobWatcherConfig()
	cfg.State = func() *state.StateStore { return w.st }
	cfg.Apply = w.apply
	cfg.PlanLock = new(sync.Mutex)
	cfg.Logger = testlog.Logger(t, "jobwatcher")
	cfg.Clock = w.clock
	cfg.JobMaxCount = testJobMaxCount
	for _, e := range edit {
		e(&cfg)
	}
	jw, err := NewJobWatcher(cfg)
	must.NoError(t, err)
	return jw
}

// pass makes one pass and returns the IDs of the jobs it re-planned,
// sorted.
func pass(t *testing.T, jw *JobWatcher, full bool) []string {
	t.Helper()
	keys, err := jw.pass(context.Background(), memdb.NewWatchSet(), full)
	must.NoError(t, err)
	ids := []string{}
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	sort.Strings(ids)
	return ids
}

func TestJobWatcherConfig_Validate(t *testing.T) {
	def := DefaultJobWatcherConfig()
	must.Error(t, def.Validate(), must.Sprint("no state, apply, lock or count limit"))
	w := newWorld(t)
	jw := newWatcher(t, w)
	must.NoError(t, jw.cfg.Validate())
	for name, edit := range map[string]func(*JobWatcherConfig){
		"no apply":    func(c *JobWatcherConfig) { c.Apply = nil },
		"no limit":    func(c *JobWatcherConfig) { c.JobMaxCount = 0 },
		"no idle":     func(c *JobWatcherConfig) { c.Idle = 0 },
		"no clock":    func(c *JobWatcherConfig) { c.Clock = nil },
		"neg. settle": func(c *JobWatcherConfig) { c.Settle = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := jw.cfg
			edit(&cfg)
			_, err := NewJobWatcher(cfg)
			must.Error(t, err)
		})
	}
}

// TestJobWatcher_Pass_ReplansOnlyWhatChanged: after a first pass over
// every job, a pass re-plans only the jobs what changed concerns: none
// for an allocation that still holds its place; the waiting jobs when a
// volume changes (a waiting writer is placed once the claim it waited
// for is freed); the system jobs and the waiting ones when a node becomes
// ready; a job whose allocation was lost with its node; a job written.
func TestJobWatcher_Pass_ReplansOnlyWhatChanged(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	w.volume("data")
	first := w.run(writerJob("first", "data")).Plan.Allocs[0]
	must.SliceLen(t, 1, w.run(writerJob("second", "data")).Failures, must.Sprint("second waits for the claim"))
	idle := w.run(writerJob("idle", "")).Plan.Allocs[0]
	must.SliceLen(t, 2, w.run(systemJob("sys")).Plan.Allocs)
	jw := newWatcher(t, w)

	must.Eq(t, []string{"first", "idle", "second", "sys"}, pass(t, jw, false), must.Sprint("the first pass looks at every job"))
	must.Eq(t, []string{}, pass(t, jw, false), must.Sprint("nothing changed"))

	w.clientStatus(idle.ID, structs.AllocClientStatusRunning)
	must.Eq(t, []string{}, pass(t, jw, false), must.Sprint("a running alloc holds its place"))

	// The first writer's tasks are dead: its claim is released, not
	// freed; the second still waits.
	w.clientStatus(first.ID, structs.AllocClientStatusComplete)
	must.Eq(t, []string{"first", "second"}, pass(t, jw, false))
	must.SliceEmpty(t, w.allocs("second", all))

	// Freed: the second is placed.
	w.free("data", first.ID)
	must.Eq(t, []string{"second"}, pass(t, jw, false))
	placed := w.allocs("second", live)
	must.SliceLen(t, 1, placed)
	vol, err := w.st.CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, placed[0].ID, must.Sprint("the claim is reserved with the placement"))
	must.Eq(t, []string{}, pass(t, jw, false), must.Sprint("its own placement wakes no job: none waits"))

	// A node joins: the system job runs there; no other job is planned.
	w.node("node-3")
	must.Eq(t, []string{"sys"}, pass(t, jw, false))
	must.SliceLen(t, 3, w.allocs("sys", live))

	// The second's node goes down: its alloc, and the other jobs' there,
	// are lost; those jobs are planned; the second is replaced elsewhere
	// once its claim is freed.
	onNode := map[string]bool{}
	iter, err := w.st.AllocsByNode(nil, placed[0].NodeID)
	must.NoError(t, err)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); live(a) {
			onNode[a.JobID] = true
		}
	}
	must.MapContainsKeys(t, onNode, []string{"second", "sys"})
	w.nodeStatus(placed[0].NodeID, structs.NodeStatusDown)
	lostJobs := pass(t, jw, false)
	must.SliceLen(t, len(onNode), lostJobs)
	for _, id := range lostJobs {
		must.MapContainsKey(t, onNode, id)
	}
	must.SliceEmpty(t, w.allocs("second", live), must.Sprint("its claim is released, not freed"))
	must.SliceLen(t, 2, w.allocs("sys", live), must.Sprint("no system alloc on the node that is down"))
	w.free("data", placed[0].ID)
	must.Eq(t, []string{"second"}, pass(t, jw, false))
	replaced := w.allocs("second", live)
	must.SliceLen(t, 1, replaced)
	must.NotEq(t, placed[0].NodeID, replaced[0].NodeID)

	// A job written is planned; a stopped one is forgotten.
	must.NoError(t, w.st.StopJob(w.next(), structs.DefaultNamespace, "idle", false, w.clock.Now()))
	must.Eq(t, []string{"idle"}, pass(t, jw, false))
	must.SliceEmpty(t, w.allocs("idle", live))
	w.node("node-4")
	must.Eq(t, []string{"sys"}, pass(t, jw, false))
}

// TestJobWatcher_Pass_WaitingJobWakesOnANode: a job that fits on no node
// waits, and is placed when a node that can run it is ready; a node
// that is not ready wakes no job.
func TestJobWatcher_Pass_WaitingJobWakesOnANode(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	job := writerJob("root", "")
	job.TaskGroups[0].Tasks[0].User = "root"
	must.SliceLen(t, 1, w.run(job).Failures)
	jw := newWatcher(t, w)
	must.Eq(t, []string{"root"}, pass(t, jw, false))
	must.MapContainsKey(t, jw.waiting, jobKey{structs.DefaultNamespace, "root"})

	n := statetest.Node("node-2")
	n.AllowRootTasks = true
	n.Status = structs.NodeStatusInit
	w.upsertNode(n)
	must.Eq(t, []string{}, pass(t, jw, false), must.Sprint("a node not ready places nothing"))
	w.nodeStatus("node-2", structs.NodeStatusReady)
	must.Eq(t, []string{"root"}, pass(t, jw, false))
	must.SliceLen(t, 1, w.allocs("root", live))
	must.MapEmpty(t, jw.waiting)
}

// TestJobWatcher_Pass_FullPass: a full pass, and a pass over a store
// that replaced the one before (a snapshot restore), look at every job
// not stopped.
func TestJobWatcher_Pass_FullPass(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.run(writerJob("a", ""))
	w.run(writerJob("b", ""))
	must.NoError(t, w.st.StopJob(w.next(), structs.DefaultNamespace, "b", false, w.clock.Now()))
	jw := newWatcher(t, w)
	must.Eq(t, []string{"a"}, pass(t, jw, false))
	must.Eq(t, []string{}, pass(t, jw, false))
	must.Eq(t, []string{"a"}, pass(t, jw, true))

	other := newWorld(t)
	other.node("node-1")
	other.run(writerJob("c", ""))
	w.st = other.st
	must.Eq(t, []string{"c"}, pass(t, jw, false))
}

// TestJobWatcher_Pass_SkipsAJobOverTheCountLimit: a job stored with a
// count over the limit (before the limit, or before it was lowered) is
// not placed by the leader unasked.
func TestJobWatcher_Pass_SkipsAJobOverTheCountLimit(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	job := writerJob("old", "")
	job.TaskGroups[0].Count = 1000
	must.NoError(t, w.apply(&structs.PlanApplyRequest{Job: job}))
	jw := newWatcher(t, w, func(c *JobWatcherConfig) { c.JobMaxCount = 10 })
	must.Eq(t, []string{"old"}, pass(t, jw, false))
	must.SliceEmpty(t, w.allocs("old", all), must.Sprint("nothing placed"))
	must.MapEmpty(t, jw.waiting)
}

// TestJobWatcher_Run_SettlesThenPlaces: Run's first pass plans every
// job; a burst of writes is looked at once, when the settle delay has
// passed, and places the writer that waited for the claim freed; with no
// change, Run plans every job again after the idle wait. The planner's
// log counts its passes per job.
func TestJobWatcher_Run_SettlesThenPlaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.node("node-1")
		w.volume("data")
		first := w.run(writerJob("first", "data")).Plan.Allocs[0]
		w.clientStatus(first.ID, structs.AllocClientStatusComplete)
		must.NoError(t, w.apply(&structs.PlanApplyRequest{Job: writerJob("second", "data")}))

		var rec testlog.Recorder
		jw := newWatcher(t, w, func(c *JobWatcherConfig) { c.Logger = rec.Logger("leader") })
		planned := func() map[string]int {
			out := map[string]int{}
			for _, id := range []string{"first", "second"} {
				out[id] = strings.Count(rec.String(), "planned job: job_id="+id+" ")
			}
			return out
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			jw.Run(ctx)
		}()
		synctest.Wait()
		must.Eq(t, map[string]int{"first": 1, "second": 1}, planned(), must.Sprint("the first pass plans every job"))
		must.SliceEmpty(t, w.allocs("second", all), must.Sprint("the claim is not freed yet"))

		w.free("data", first.ID)
		w.volume("other")
		synctest.Wait()
		must.Eq(t, map[string]int{"first": 1, "second": 1}, planned(), must.Sprint("nothing before the settle delay"))
		w.clock.Advance(jw.cfg.Settle)
		synctest.Wait()
		must.Eq(t, map[string]int{"first": 1, "second": 2}, planned(), must.Sprint("one pass for the burst: the waiting job"))
		must.SliceLen(t, 1, w.allocs("second", live))

		w.clock.Advance(jw.cfg.Settle) // the pass its own placement wakes: no job waits
		synctest.Wait()
		must.Eq(t, map[string]int{"first": 1, "second": 2}, planned())

		w.clock.Advance(jw.cfg.Idle)
		synctest.Wait()
		w.clock.Advance(jw.cfg.Settle)
		synctest.Wait()
		must.Eq(t, map[string]int{"first": 2, "second": 3}, planned(), must.Sprint("the idle pass plans every job"))

		cancel()
		<-done
	})
}
