package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestPlanner_Plan_ReservesTheClaimWithThePlacement: the plan carries the
// placement and its claim, stamped with the clock's time; a second writer
// is not placed, and the reason names the alloc and node holding it.
func TestPlanner_Plan_ReservesTheClaimWithThePlacement(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	w.volume("data")
	first := w.run(writerJob("first", "data"))
	must.SliceEmpty(t, first.Failures)
	must.SliceLen(t, 1, first.Plan.Allocs)
	must.SliceLen(t, 1, first.Plan.Claims)
	placed, claim := first.Plan.Allocs[0], first.Plan.Claims[0]
	must.EqOp(t, placed.ID, claim.AllocationID)
	must.EqOp(t, placed.NodeID, claim.NodeID)
	must.EqOp(t, structs.CSIVolumeClaimStateTaken, claim.State)
	must.Eq(t, w.clock.Now(), claim.Timestamp, must.Sprint("the claim is stamped with the injected clock's time"))
	must.NotNil(t, first.Plan.Job, must.Sprint("a user's run carries the job"))

	second, err := w.planner.Plan(w.st, writerJob("second", "data"), Run)
	must.NoError(t, err)
	must.SliceEmpty(t, second.Plan.Allocs)
	must.SliceLen(t, 1, second.Failures)
	reasons := strings.Join(second.Failures[0].Reasons, "\n")
	must.StrContains(t, reasons, `volume "data"`)
	must.StrContains(t, reasons, placed.ID)
	must.StrContains(t, reasons, placed.NodeID)

	third, err := w.planner.Plan(w.st, writerJob("third", "nope"), Run)
	must.NoError(t, err)
	must.StrContains(t, third.Failures[0].Reasons[0], `(nope): not registered`)
}

// TestPlanner_Plan_CountAtTheCapCostsTheNodes: a job asking for the most
// allocations a job may have, none of which fits on the one node, asks
// that node once, not once per count, in a user's run and in an auto
// pass. The reason counts nodes.
func TestPlanner_Plan_CountAtTheCapCostsTheNodes(t *testing.T) {
	const count = 10_000 // server.DefaultJobMaxCount
	w := newWorld(t)
	w.node("node-1")
	job := writerJob("huge", "nope")
	job.TaskGroups[0].Count = count
	for _, mode := range []Mode{Run, Auto} {
		res, err := w.planner.Plan(w.st, job, mode)
		must.NoError(t, err)
		must.EqOp(t, 1, res.Checks, must.Sprintf("mode %d: one check of the one node", mode))
		must.SliceEmpty(t, res.Plan.Allocs)
		must.SliceLen(t, 1, res.Failures)
		must.EqOp(t, count, res.Failures[0].Missing)
		must.Eq(t, []string{`volume "data" (nope): not registered; create or register it first (1 node)`}, res.Failures[0].Reasons)
	}
}

// TestPlanner_Plan_WorkGrowsWithPlacements: count allocations that fit
// take count checks on one node, and the indexes are 0..count-1.
func TestPlanner_Plan_WorkGrowsWithPlacements(t *testing.T) {
	const count = 50
	w := newWorld(t)
	w.node("node-1")
	job := writerJob("many", "")
	job.TaskGroups[0].Count = count
	res, err := w.planner.Plan(w.st, job, Run)
	must.NoError(t, err)
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, count, res.Checks)
	names := map[string]bool{}
	for _, a := range res.Plan.Allocs {
		names[a.Name] = true
	}
	must.MapLen(t, count, names)
	for i := 0; i < count; i++ {
		must.MapContainsKey(t, names, fmt.Sprintf("many.db[%d]", i))
	}
}

// TestPlanner_Plan_SpreadsOverTheNodes: a group's allocations go to the
// node with the fewest of them, the group's live ones included.
func TestPlanner_Plan_SpreadsOverTheNodes(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	job := writerJob("web", "")
	job.TaskGroups[0].Count = 3
	w.run(job)
	job.TaskGroups[0].Count = 4
	w.run(job)
	perNode := map[string]int{}
	for _, a := range w.allocs("web", live) {
		perNode[a.NodeID]++
	}
	must.Eq(t, map[string]int{"node-1": 2, "node-2": 2}, perNode)
}

// TestPlanner_Plan_ReasonCountsNodes: a group that fits nowhere says how
// many nodes gave each reason, whatever its count.
func TestPlanner_Plan_ReasonCountsNodes(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	w.volume("data")
	w.run(writerJob("first", "data"))
	second := writerJob("second", "data")
	second.TaskGroups[0].Count = 100
	res, err := w.planner.Plan(w.st, second, Run)
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Failures)
	must.EqOp(t, 100, res.Failures[0].Missing)
	must.SliceLen(t, 1, res.Failures[0].Reasons)
	must.StrHasSuffix(t, " (2 nodes)", res.Failures[0].Reasons[0])
}

// TestPlanner_Plan_MaxVolumesCountsEveryJob: a plugin's max volumes per
// node counts the volumes other jobs claim there.
func TestPlanner_Plan_MaxVolumesCountsEveryJob(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"node-1", "node-2"} {
		n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
		n.CSINodePlugins["hostpath"].NodeInfo.MaxVolumes = 1
		w.upsertNode(n)
	}
	w.volume("v1", "v2", "v3")
	nodes := map[string]bool{}
	for _, v := range []string{"v1", "v2"} {
		res := w.run(writerJob("job-"+v, v))
		must.SliceLen(t, 1, res.Plan.Allocs, must.Sprintf("job-%s: %v", v, res.Failures))
		nodes[res.Plan.Allocs[0].NodeID] = true
	}
	must.MapLen(t, 2, nodes, must.Sprint("one volume per node"))
	res, err := w.planner.Plan(w.st, writerJob("job-v3", "v3"), Run)
	must.NoError(t, err)
	must.SliceEmpty(t, res.Plan.Allocs)
	must.StrContains(t, strings.Join(res.Failures[0].Reasons, "\n"), `plugin "hostpath" is at its max of 1 volumes on the node (2 nodes)`)
}

// TestPlanner_Plan_RootTaskOnlyWhereAllowed: a group with a task that
// needs root (a plugin task, user = "root") is placed only on a node whose
// client allows root tasks; elsewhere the failure names the task, the
// node and the setting to change. A task as nobody goes anywhere.
func TestPlanner_Plan_RootTaskOnlyWhereAllowed(t *testing.T) {
	plugin := func(j *structs.Job) {
		j.TaskGroups[0].Tasks[0].Name = "plugin"
		j.TaskGroups[0].Tasks[0].CSIPluginConfig = &structs.TaskCSIPluginConfig{ID: "hp", Type: structs.CSIPluginTypeMonolith, MountDir: "/csi"}
	}
	cases := []struct {
		name   string
		edit   func(*structs.Job)
		placed bool
	}{
		{"plugin task", plugin, false},
		{"user root", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "plugin"; j.TaskGroups[0].Tasks[0].User = "root" }, false},
		{"uid 0", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "plugin"; j.TaskGroups[0].Tasks[0].User = "0" }, false},
		{"plugin task as nobody", func(j *structs.Job) { plugin(j); j.TaskGroups[0].Tasks[0].User = "nobody" }, true},
		{"default user", func(*structs.Job) {}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.node("node-1") // neither allows root tasks
			w.node("node-2")
			job := writerJob("j", "")
			tc.edit(job)
			res, err := w.planner.Plan(w.st, job, Run)
			must.NoError(t, err)
			if tc.placed {
				must.SliceLen(t, 1, res.Plan.Allocs)
				must.SliceEmpty(t, res.Failures)
				return
			}
			must.SliceEmpty(t, res.Plan.Allocs)
			must.SliceLen(t, 1, res.Failures)
			must.Eq(t, []string{
				`task "plugin" needs root (a csi_plugin task, or user = "root"); node "node-1" does not allow root tasks: ` +
					`set client { allow_root_tasks = true } in its agent config (1 node)`,
				`task "plugin" needs root (a csi_plugin task, or user = "root"); node "node-2" does not allow root tasks: ` +
					`set client { allow_root_tasks = true } in its agent config (1 node)`,
			}, res.Failures[0].Reasons)

			// A node that allows root tasks runs it.
			n := statetest.Node("node-3")
			n.AllowRootTasks = true
			w.upsertNode(n)
			again, err := w.planner.Plan(w.st, job, Run)
			must.NoError(t, err)
			must.SliceLen(t, 1, again.Plan.Allocs)
			must.Eq(t, "node-3", again.Plan.Allocs[0].NodeID)
		})
	}
}

// TestPlanner_Plan_SystemJobOncePerReadyNode: a system job gets one
// allocation per ready node, and none more on a node that runs one.
func TestPlanner_Plan_SystemJobOncePerReadyNode(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.node("node-2")
	w.node("node-3")
	w.nodeStatus("node-3", structs.NodeStatusInit)
	first := w.run(systemJob("sys"))
	must.SliceLen(t, 2, first.Plan.Allocs)
	must.NotEq(t, first.Plan.Allocs[0].NodeID, first.Plan.Allocs[1].NodeID)
	must.NotEq(t, first.Plan.Allocs[0].Name, first.Plan.Allocs[1].Name)

	w.nodeStatus("node-3", structs.NodeStatusReady)
	again, err := w.planner.Plan(w.st, systemJob("sys"), Auto)
	must.NoError(t, err)
	must.SliceLen(t, 1, again.Plan.Allocs)
	must.EqOp(t, "node-3", again.Plan.Allocs[0].NodeID)
	must.SliceEmpty(t, again.Failures)
}

// TestPlanner_Plan_AutoLeavesFailedAllocsAlone: an auto pass does not
// replace a failed allocation, nor a completed one, but does a lost one;
// a user's run replaces them all. An auto plan carries only placements,
// for the job as stored.
func TestPlanner_Plan_AutoLeavesFailedAllocsAlone(t *testing.T) {
	cases := []struct {
		status   string
		autoPlan bool
	}{
		{structs.AllocClientStatusFailed, false},
		{structs.AllocClientStatusComplete, false},
		{structs.AllocClientStatusLost, true},
	}
	for _, tc := range cases {
		t.Run(tc.status, func(t *testing.T) {
			w := newWorld(t)
			w.node("node-1")
			first := w.run(writerJob("app", ""))
			w.clientStatus(first.Plan.Allocs[0].ID, tc.status)
			stored, err := w.st.JobByID(nil, structs.DefaultNamespace, "app")
			must.NoError(t, err)

			auto, err := w.planner.Plan(w.st, stored, Auto)
			must.NoError(t, err)
			must.Nil(t, auto.Plan.Job)
			must.EqOp(t, "app", auto.Plan.JobID)
			must.EqOp(t, stored.ModifyIndex, auto.Plan.JobModifyIndex)
			must.EqOp(t, tc.autoPlan, len(auto.Plan.Allocs) == 1)

			run, err := w.planner.Plan(w.st, stored, Run)
			must.NoError(t, err)
			must.SliceLen(t, 1, run.Plan.Allocs)
		})
	}
}
