package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// sizedNode registers a ready node of 2 cores at 1000 MHz and 1024 MiB,
// of which its client reserves 124 MiB: 900 MiB and 2000 MHz to offer.
func (w *world) sizedNode(id string) *structs.Node {
	w.t.Helper()
	n := w.node(id)
	n = n.Copy()
	n.Resources = &structs.NodeResources{CPU: 2000, Cores: 2, MemoryMB: 1024}
	n.Reserved = &structs.NodeResources{MemoryMB: 124}
	w.upsertNode(n)
	return n
}

func sizedJob(id string, count int, res *structs.Resources) *structs.Job {
	j := writerJob(id, "")
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Tasks[0].Resources = res
	return j
}

// TestPlanner_Plan_Resources: the planner places only what fits in what a
// node offers (its resources less its reservation), counting every job's
// allocations there and its own plan's, and says what is allocated of
// what when a group does not fit.
func TestPlanner_Plan_Resources(t *testing.T) {
	w := newWorld(t)
	w.sizedNode("node-1")

	res := w.run(sizedJob("db", 5, &structs.Resources{CPU: 100, MemoryMB: 256}))
	must.SliceLen(t, 3, res.Plan.Allocs, must.Sprint("3 × 256 MiB fit in 900"))
	must.SliceLen(t, 1, res.Failures)
	must.EqOp(t, 2, res.Failures[0].Missing)
	must.Eq(t, []string{`node "node-1": memory 768/900 MiB allocated, the group asks 256`}, res.Failures[0].Reasons)

	// Another job sees what the first took.
	res = w.run(sizedJob("web", 1, &structs.Resources{CPU: 100, MemoryMB: 200}))
	must.Eq(t, []string{`node "node-1": memory 768/900 MiB allocated, the group asks 200`}, res.Failures[0].Reasons)
	res = w.run(sizedJob("small", 1, &structs.Resources{CPU: 100, MemoryMB: 100}))
	must.SliceEmpty(t, res.Failures)

	// CPU: 2000 MHz, 400 taken; cores stand for 1000 MHz each.
	res = w.run(sizedJob("cpu", 1, &structs.Resources{CPU: 1700, MemoryMB: 10}))
	must.Eq(t, []string{`node "node-1": cpu 400/2000 MHz allocated, the group asks 1700`}, res.Failures[0].Reasons)
	res = w.run(sizedJob("cores", 1, &structs.Resources{Cores: 2, MemoryMB: 10}))
	must.Eq(t, []string{`node "node-1": cpu 400/2000 MHz allocated, the group asks 2000`}, res.Failures[0].Reasons)
	res = w.run(sizedJob("core", 1, &structs.Resources{Cores: 1, MemoryMB: 10}))
	must.SliceEmpty(t, res.Failures)

	// A stopped allocation frees its share at once.
	db := w.allocs("db", live)
	must.SliceLen(t, 3, db)
	stop := &structs.Job{ID: "db", Namespace: structs.DefaultNamespace, Type: structs.JobTypeService, Stop: true,
		TaskGroups: sizedJob("db", 0, &structs.Resources{CPU: 100, MemoryMB: 256}).TaskGroups}
	w.run(stop)
	res = w.run(sizedJob("web2", 1, &structs.Resources{CPU: 100, MemoryMB: 500}))
	must.SliceEmpty(t, res.Failures)
}

// TestPlanner_Plan_ResourcesManyNodes: nodes short of one resource make
// one reason that counts them and names the first few.
func TestPlanner_Plan_ResourcesManyNodes(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"node-1", "node-2", "node-3", "node-4", "node-5"} {
		w.sizedNode(id)
	}
	res := w.run(sizedJob("big", 1, &structs.Resources{CPU: 100, MemoryMB: 1000}))
	must.Eq(t, []string{`not enough memory on 5 nodes: node "node-1": memory 0/900 MiB allocated, the group asks 1000; ` +
		`node "node-2": memory 0/900 MiB allocated, the group asks 1000; node "node-3": memory 0/900 MiB allocated, the group asks 1000; ` +
		`and 2 more`}, res.Failures[0].Reasons)
}

// TestPlanner_Plan_NodeWithoutResources: a node whose client reports no
// resources (an older client) is not limited.
func TestPlanner_Plan_NodeWithoutResources(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	res := w.run(sizedJob("db", 4, &structs.Resources{CPU: 4000, MemoryMB: 100000}))
	must.SliceEmpty(t, res.Failures)
	must.SliceLen(t, 4, res.Plan.Allocs)
}
