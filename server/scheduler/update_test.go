package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// changed is job with its task's command changed: a new version whose
// allocations replace the old ones.
func changed(job *structs.Job, command string) *structs.Job {
	j := job.Copy()
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": command}
	return j
}

// runAll reports every live allocation of the job running, at the
// clock's time.
func (w *world) runAll(jobID string) {
	w.t.Helper()
	for _, a := range w.allocs(jobID, live) {
		if a.ClientStatus != structs.AllocClientStatusRunning {
			w.clientStatus(a.ID, structs.AllocClientStatusRunning)
		}
	}
}

// auto is the job watcher's pass over the stored job, written.
func (w *world) auto(jobID string) *Result {
	w.t.Helper()
	job, err := w.st.JobByID(nil, structs.DefaultNamespace, jobID)
	must.NoError(w.t, err)
	res, err := w.planner.Plan(w.st, job, Auto)
	must.NoError(w.t, err)
	if len(res.Plan.Allocs) > 0 || len(res.Plan.Stops) > 0 {
		must.NoError(w.t, w.apply(res.Plan))
	}
	return res
}

func versions(allocs []*structs.Allocation) map[uint64]int {
	out := map[uint64]int{}
	for _, a := range allocs {
		out[a.JobVersion]++
	}
	return out
}

// TestPlanner_Update_Rolling: a changed group is replaced one allocation
// at a time (max_parallel 1): the next old one stops only once the last
// replacement has run for min_healthy_time, which the result says when
// to look again.
func TestPlanner_Update_Rolling(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	v0 := writerJob("web", "")
	v0.TaskGroups[0].Count = 3
	w.run(v0)
	w.clock.Advance(time.Minute)
	w.runAll("web")
	w.clock.Advance(time.Minute) // every one healthy

	same := w.run(v0.Copy())
	must.SliceEmpty(t, same.Plan.Stops, must.Sprint("the same spec replaces nothing"))
	must.Eq(t, []*structs.GroupChange{{TaskGroup: "db", Unchanged: 3}}, same.Groups)

	v1 := changed(v0, "/bin/v1")
	res := w.run(v1)
	must.Eq(t, []*structs.GroupChange{{TaskGroup: "db", Place: 1, Stop: 1, Replace: 1, Outdated: 2}}, res.Groups)
	must.True(t, res.Updating)
	must.SliceLen(t, 1, res.Plan.Stops)
	must.EqOp(t, structs.UpdateDescription(1), res.Plan.Stops[0].Description)
	stopped, err := w.st.AllocByID(nil, res.Plan.Stops[0].AllocID)
	must.NoError(t, err)
	must.EqOp(t, "web.db[0]", stopped.Name, must.Sprint("the lowest index goes first"))
	must.EqOp(t, structs.AllocDesiredStatusStop, stopped.DesiredStatus)
	must.EqOp(t, structs.UpdateDescription(1), stopped.DesiredDescription)
	must.EqOp(t, "web.db[0]", res.Plan.Allocs[0].Name, must.Sprint("its replacement takes its place"))
	must.Eq(t, map[uint64]int{0: 2, 1: 1}, versions(w.allocs("web", live)))

	// The replacement is pending: in flight, nothing more stops.
	res = w.auto("web")
	must.SliceEmpty(t, res.Plan.Stops)
	must.True(t, res.Updating)
	must.True(t, res.NextCheck.After(w.clock.Now()), must.Sprint("its healthy deadline"))

	// It runs, not yet for min_healthy_time (10s): look again then.
	w.runAll("web")
	res = w.auto("web")
	must.SliceEmpty(t, res.Plan.Stops)
	must.Eq(t, w.clock.Now().Add(structs.DefaultUpdateMinHealthyTime), res.NextCheck)

	w.clock.Advance(structs.DefaultUpdateMinHealthyTime)
	res = w.auto("web")
	must.SliceLen(t, 1, res.Plan.Stops, must.Sprint("healthy: the next one goes"))
	must.SliceLen(t, 1, res.Plan.Allocs)

	w.runAll("web")
	w.clock.Advance(structs.DefaultUpdateMinHealthyTime)
	res = w.auto("web")
	must.SliceLen(t, 1, res.Plan.Stops)
	must.False(t, res.Updating, must.Sprint("the last old one is stopped"))
	must.Eq(t, map[uint64]int{1: 3}, versions(w.allocs("web", live)))
}

// TestPlanner_Update_CountOnly: a change of count alone adds or stops
// allocations, highest index first, and replaces none.
func TestPlanner_Update_CountOnly(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	j := writerJob("web", "")
	j.TaskGroups[0].Count = 3
	w.run(j)
	w.runAll("web")

	down := j.Copy()
	down.TaskGroups[0].Count = 1
	res := w.run(down)
	must.Eq(t, []*structs.GroupChange{{TaskGroup: "db", Stop: 2, Unchanged: 1}}, res.Groups)
	names := map[string]bool{}
	for _, s := range res.Plan.Stops {
		a, err := w.st.AllocByID(nil, s.AllocID)
		must.NoError(t, err)
		names[a.Name] = true
		must.EqOp(t, "count lowered to 1", a.DesiredDescription)
	}
	must.Eq(t, map[string]bool{"web.db[1]": true, "web.db[2]": true}, names)

	up := j.Copy()
	up.TaskGroups[0].Count = 2
	res = w.run(up)
	must.SliceEmpty(t, res.Plan.Stops)
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.False(t, res.Updating)
}

// TestPlanner_Update_SingleWriterWaitsForTheClaim: a group that writes a
// single-node-writer volume has its old allocation stopped first; the
// replacement is not placed while the old claim is held (never two
// writers, never a placement waiting on the claim), and is placed by the
// leader's pass once the claim is freed.
func TestPlanner_Update_SingleWriterWaitsForTheClaim(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.volume("data")
	v0 := writerJob("db", "data")
	old := w.run(v0).Plan.Allocs[0]
	w.runAll("db")
	w.clock.Advance(time.Minute)

	res := w.run(changed(v0, "/bin/v1"))
	must.SliceLen(t, 1, res.Plan.Stops)
	must.EqOp(t, old.ID, res.Plan.Stops[0].AllocID)
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("the claim is still the old one's"))
	must.SliceLen(t, 1, res.Failures)
	must.True(t, res.Failures[0].Replacing, must.Sprint("a wait of the update, not a failure"))

	w.clientStatus(old.ID, structs.AllocClientStatusComplete)
	must.SliceEmpty(t, w.auto("db").Plan.Allocs, must.Sprint("released, not yet freed"))
	w.free("data", old.ID)
	res = w.auto("db")
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.EqOp(t, uint64(1), w.allocs("db", live)[0].JobVersion)
	vol, err := w.st.CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, res.Plan.Allocs[0].ID)
}

// TestPlanner_Update_StopsOnAFailedReplacement: a replacement that fails
// stops the update; the allocations not yet replaced keep running.
func TestPlanner_Update_StopsOnAFailedReplacement(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	v0 := writerJob("web", "")
	v0.TaskGroups[0].Count = 2
	w.run(v0)
	w.runAll("web")
	w.clock.Advance(time.Minute)

	res := w.run(changed(v0, "/bin/broken"))
	w.clientStatus(res.Plan.Allocs[0].ID, structs.AllocClientStatusFailed)
	res = w.auto("web")
	must.SliceEmpty(t, res.Plan.Stops)
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("a failed allocation is not replaced unasked"))
	must.StrContains(t, res.Groups[0].UpdateFailed, "failed")
	must.Eq(t, map[uint64]int{0: 1, 1: 1}, versions(w.allocs("web", func(a *structs.Allocation) bool {
		return a.DesiredStatus == structs.AllocDesiredStatusRun
	})))

	// One that never becomes healthy stops it at its deadline.
	w2 := newWorld(t)
	w2.node("node-1")
	w2.run(v0)
	w2.runAll("web")
	w2.clock.Advance(time.Minute)
	w2.run(changed(v0, "/bin/slow"))
	w2.clock.Advance(structs.DefaultUpdateHealthyDeadline)
	res = w2.auto("web")
	must.SliceEmpty(t, res.Plan.Stops)
	must.StrContains(t, res.Groups[0].UpdateFailed, "not healthy within healthy_deadline 5m0s")
}

// TestPlanner_Update_SystemJob: a system job's old allocation on a node
// is replaced there once it is over, one node at a time.
func TestPlanner_Update_SystemJob(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	v0 := systemJob("plugin")
	w.run(v0)
	w.runAll("plugin")
	w.clock.Advance(time.Minute)

	res := w.run(changed(v0, "/bin/plugin-v2"))
	must.SliceLen(t, 1, res.Plan.Stops)
	must.SliceEmpty(t, res.Plan.Allocs, must.Sprint("its node waits for the old one to be over"))
	old, err := w.st.AllocByID(nil, res.Plan.Stops[0].AllocID)
	must.NoError(t, err)

	w.clientStatus(old.ID, structs.AllocClientStatusComplete)
	res = w.auto("plugin")
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.EqOp(t, old.NodeID, res.Plan.Allocs[0].NodeID)
	must.SliceEmpty(t, res.Plan.Stops, must.Sprint("the replacement is in flight"))
}

// TestJobWatcher_Run_UpdateGoesOnByItself: the leader's watcher goes on
// with a rolling update with nothing written: it wakes when the last
// replacement has run for min_healthy_time and stops the next old one.
func TestJobWatcher_Run_UpdateGoesOnByItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.node("node-1")
		v0 := writerJob("web", "")
		v0.TaskGroups[0].Count = 2
		w.run(v0)
		w.runAll("web")
		w.clock.Advance(time.Minute)
		w.run(changed(v0, "/bin/v1"))
		w.runAll("web") // the first replacement runs

		jw := newWatcher(t, w)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			jw.Run(ctx)
		}()
		synctest.Wait()
		outdated := func() int { return versions(w.allocs("web", live))[0] }
		must.EqOp(t, 1, outdated(), must.Sprint("the replacement is not healthy yet"))

		w.clock.Advance(structs.DefaultUpdateMinHealthyTime - time.Second)
		synctest.Wait()
		must.EqOp(t, 1, outdated())
		w.clock.Advance(time.Second) // healthy now; no write woke the watcher
		synctest.Wait()
		w.clock.Advance(jw.cfg.Settle)
		synctest.Wait()
		must.EqOp(t, 0, outdated(), must.Sprint("the next old allocation is stopped by the wake alone"))
		cancel()
		<-done
	})
}

// TestPlanner_Update_RealFailureIsNotReplacing: a replacement that fits
// nowhere for another reason than the old claim is a failure, though an
// old allocation is stopping.
func TestPlanner_Update_RealFailureIsNotReplacing(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.volume("data")
	v0 := writerJob("db", "data")
	w.run(v0)
	w.runAll("db")
	w.clock.Advance(time.Minute)

	v1 := v0.Copy()
	v1.TaskGroups[0].Volumes["data"].Source = "missing"
	res := w.run(v1)
	must.SliceLen(t, 1, res.Plan.Stops)
	must.SliceLen(t, 1, res.Failures)
	must.False(t, res.Failures[0].Replacing, must.Sprint("the volume is not registered: no wait makes it fit"))
	must.StrContains(t, res.Failures[0].Reasons[0], `volume "data" (missing): not registered`)
}

// TestPlanner_Update_WaitsOnOneNodeOfMany: with other nodes refusing for
// good (the volume's topology), the node where the old claim is held is
// enough for the update to wait rather than fail.
func TestPlanner_Update_WaitsOnOneNodeOfMany(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"node-1", "node-2"} {
		n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
		info := n.CSINodePlugins["hostpath"]
		if info.NodeInfo == nil {
			info.NodeInfo = &structs.CSINodeInfo{ID: id}
		}
		info.NodeInfo.AccessibleTopology = &structs.CSITopology{Segments: map[string]string{"zone": map[string]string{"node-1": "z1", "node-2": "z2"}[id]}}
		w.upsertNode(n)
	}
	vol := statetest.Volume("data", "hostpath")
	vol.Topologies = []*structs.CSITopology{{Segments: map[string]string{"zone": "z1"}}}
	must.NoError(t, w.st.UpsertCSIVolume(w.next(), []*structs.CSIVolume{vol}))
	v0 := writerJob("db", "data")
	w.run(v0)
	w.runAll("db")
	w.clock.Advance(time.Minute)

	res := w.run(changed(v0, "/bin/v1"))
	must.SliceLen(t, 1, res.Failures)
	must.SliceLen(t, 2, res.Failures[0].Reasons, must.Sprintf("%q", res.Failures[0].Reasons))
	must.True(t, res.Failures[0].Replacing, must.Sprintf("%q", res.Failures[0].Reasons))
}
