package scheduler

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// metaNode registers a ready node with the datacenter and meta given.
func (w *world) metaNode(id, dc string, meta map[string]string) {
	w.t.Helper()
	n := w.node(id).Copy()
	n.Datacenter, n.Meta = dc, meta
	n.Attributes = map[string]string{"kernel.name": "linux", "cpu.numcores": map[string]string{"node-1": "2", "node-2": "8"}[id]}
	w.upsertNode(n)
}

func nodesOf(res *Result) map[string]int {
	out := map[string]int{}
	for _, a := range res.Plan.Allocs {
		out[a.NodeID]++
	}
	return out
}

// TestPlanner_Plan_Constraints: a group goes only to nodes that meet its
// and its job's constraints, and a failure names the constraint.
func TestPlanner_Plan_Constraints(t *testing.T) {
	w := newWorld(t)
	w.metaNode("node-1", "dc1", map[string]string{"storage": "ssd"})
	w.metaNode("node-2", "dc2", map[string]string{"storage": "nvme"})
	w.metaNode("node-3", "dc2", nil)

	job := writerJob("db", "")
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Constraints = []*structs.Constraint{{Attribute: "${meta.storage}", Value: "nvme"}}
	res := w.run(job)
	must.Eq(t, map[string]int{"node-2": 3}, nodesOf(res))

	cases := []struct {
		name string
		c    structs.Constraint
		want map[string]int
	}{
		{"datacenter", structs.Constraint{Attribute: "${node.datacenter}", Operator: "!=", Value: "dc2"}, map[string]int{"node-1": 1}},
		{"numeric", structs.Constraint{Attribute: "${attr.cpu.numcores}", Operator: ">=", Value: "4"}, map[string]int{"node-2": 1}},
		{"regexp", structs.Constraint{Attribute: "${meta.storage}", Operator: "regexp", Value: "^(ssd|hdd)$"}, map[string]int{"node-1": 1}},
		{"is_not_set", structs.Constraint{Attribute: "${meta.storage}", Operator: "is_not_set"}, map[string]int{"node-3": 1}},
		{"set_contains", structs.Constraint{Attribute: "a,b,${meta.storage}", Operator: "set_contains", Value: "b"}, map[string]int{"node-1": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := writerJob("j-"+tc.name, "")
			j.Constraints = []*structs.Constraint{&tc.c}
			res := w.run(j)
			must.SliceEmpty(t, res.Failures)
			must.Eq(t, tc.want, nodesOf(res))
		})
	}

	none := writerJob("none", "")
	none.TaskGroups[0].Constraints = []*structs.Constraint{{Attribute: "${meta.storage}", Value: "tape"}}
	res = w.run(none)
	must.Eq(t, []string{`constraint ${meta.storage} = "tape" not met (3 nodes)`}, res.Failures[0].Reasons)
}

// TestPlanner_Plan_DistinctHosts: at group level no two of the group's
// allocations share a node; at job level no two of the job's.
func TestPlanner_Plan_DistinctHosts(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"node-1", "node-2", "node-3"} {
		w.node(id)
	}
	job := writerJob("db", "")
	job.TaskGroups[0].Count = 4
	job.TaskGroups[0].Constraints = []*structs.Constraint{{Operator: structs.ConstraintDistinctHosts}}
	res := w.run(job)
	must.Eq(t, map[string]int{"node-1": 1, "node-2": 1, "node-3": 1}, nodesOf(res))
	must.EqOp(t, 1, res.Failures[0].Missing)
	must.Eq(t, []string{`distinct_hosts: the node runs an allocation of group "db" already (3 nodes)`}, res.Failures[0].Reasons)

	two := writerJob("pair", "")
	second := two.TaskGroups[0].Copy()
	second.Name = "replica"
	two.TaskGroups = append(two.TaskGroups, second)
	two.TaskGroups[0].Count, two.TaskGroups[1].Count = 2, 1
	two.Constraints = []*structs.Constraint{{Operator: structs.ConstraintDistinctHosts, Value: "true"}}
	res = w.run(two)
	must.SliceEmpty(t, res.Failures)
	must.Eq(t, map[string]int{"node-1": 1, "node-2": 1, "node-3": 1}, nodesOf(res), must.Sprint("one of the job's per node, across groups"))
}

// TestPlanner_Plan_AffinityAndSpread: an affinity draws allocations to
// the nodes it matches (or, negative, away from them); a spread shares
// them out over an attribute's values, evenly or by its targets.
func TestPlanner_Plan_AffinityAndSpread(t *testing.T) {
	w := newWorld(t)
	w.metaNode("node-1", "dc1", map[string]string{"rack": "r1"})
	w.metaNode("node-2", "dc1", map[string]string{"rack": "r1"})
	w.metaNode("node-3", "dc2", map[string]string{"rack": "r2"})
	w.metaNode("node-4", "dc2", map[string]string{"rack": "r2"})

	job := writerJob("pref", "")
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].Affinities = []*structs.Affinity{{Attribute: "${node.datacenter}", Value: "dc2", Weight: 100}}
	must.Eq(t, map[string]int{"node-3": 1, "node-4": 1}, nodesOf(w.run(job)))

	away := writerJob("away", "")
	away.TaskGroups[0].Count = 2
	away.TaskGroups[0].Affinities = []*structs.Affinity{{Attribute: "${meta.rack}", Value: "r1", Weight: -100}}
	must.Eq(t, map[string]int{"node-3": 1, "node-4": 1}, nodesOf(w.run(away)))

	even := writerJob("even", "")
	even.TaskGroups[0].Count = 4
	even.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100}}
	byRack := func(res *Result) map[string]int {
		out := map[string]int{}
		for n, c := range nodesOf(res) {
			out[map[string]string{"node-1": "r1", "node-2": "r1", "node-3": "r2", "node-4": "r2"}[n]] += c
		}
		return out
	}
	must.Eq(t, map[string]int{"r1": 2, "r2": 2}, byRack(w.run(even)))

	target := writerJob("target", "")
	target.TaskGroups[0].Count = 4
	target.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100,
		Targets: []structs.SpreadTarget{{Value: "r1", Percent: 75}, {Value: "r2", Percent: 25}}}}
	must.Eq(t, map[string]int{"r1": 3, "r2": 1}, byRack(w.run(target)))
}

// TestPlanner_Plan_TaskUsers: a task goes only where the node's client
// lets its user run: within allowed, not denied by name, not a member of
// a denied group the client found; the reason says which and what to do.
func TestPlanner_Plan_TaskUsers(t *testing.T) {
	w := newWorld(t)
	n := w.node("node-1").Copy()
	n.TaskUsers = &structs.TaskUserPolicy{Denied: []string{"backup"}, DeniedMembers: []string{"syslog"}}
	w.upsertNode(n)
	for user, why := range map[string]string{
		"backup": "the node's client { user { denied } } lists it",
		"syslog": "it is in a group the node's client { user { denied_groups } } refuses (docker, disk, adm, shadow, sudo)",
	} {
		job := writerJob("as-"+user, "")
		job.TaskGroups[0].Tasks[0].User = user
		res := w.run(job)
		must.Eq(t, []string{fmt.Sprintf(`task "db" runs as user %q; node "node-1" does not allow it: %s; choose another user, `+
			`or change client { user { ... } } in the node's agent config (1 node)`, user, why)}, res.Failures[0].Reasons)
	}
	must.SliceEmpty(t, w.run(writerJob("default", "")).Failures, must.Sprint("nobody, the default, may run"))

	n = n.Copy()
	n.TaskUsers = &structs.TaskUserPolicy{Allowed: []string{"app"}}
	w.upsertNode(n)
	res := w.run(writerJob("default2", ""))
	must.StrContains(t, res.Failures[0].Reasons[0], `runs as user "nobody"; node "node-1" does not allow it: it is not one of the users`)
	plugin := writerJob("plugin", "")
	plugin.TaskGroups[0].Tasks[0].User = "root"
	must.StrContains(t, w.run(plugin).Failures[0].Reasons[0], "needs root", must.Sprint("root is allow_root_tasks', not the list's"))
}
