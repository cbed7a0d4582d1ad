package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const engineDown = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"

// dockerNode registers a ready node whose docker driver is as given: nil
// for a node that reports no docker driver.
func (w *world) dockerNode(id string, docker *structs.DriverInfo) *structs.Node {
	w.t.Helper()
	n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
	n.Drivers = map[string]*structs.DriverInfo{structs.DriverExec: {Detected: true, Healthy: true}}
	if docker != nil {
		n.Drivers[structs.DriverDocker] = docker
	}
	w.upsertNode(n)
	return n
}

func healthyDocker() *structs.DriverInfo {
	return &structs.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Docker 27.1.1"}
}

func unhealthyDocker(desc string) *structs.DriverInfo {
	return &structs.DriverInfo{Detected: true, HealthDescription: desc}
}

// dockerJob is writerJob (without a volume) run as a docker task.
func dockerJob(id string, privileged bool) *structs.Job {
	j := writerJob(id, "")
	task := j.TaskGroups[0].Tasks[0]
	task.Driver = structs.DriverDocker
	task.Config = map[string]any{"image": "berth-test/db", "privileged": privileged}
	return j
}

// TestPlanner_Plan_DockerOnlyWhereHealthy: a docker task goes to the node
// whose docker driver is healthy, never to one without docker (a client
// that reports no drivers, or has docker off) or with docker unhealthy;
// an exec task goes anywhere, as before drivers were reported.
func TestPlanner_Plan_DockerOnlyWhereHealthy(t *testing.T) {
	w := newWorld(t)
	w.node("node-1") // reports no drivers at all
	w.dockerNode("node-2", unhealthyDocker(engineDown))
	w.dockerNode("node-3", healthyDocker())
	w.dockerNode("node-4", &structs.DriverInfo{Detected: false, Healthy: true}) // not detected: not usable

	job := dockerJob("db", false)
	job.TaskGroups[0].Count = 3
	res := w.run(job)
	must.SliceEmpty(t, res.Failures)
	must.SliceLen(t, 3, res.Plan.Allocs)
	for _, a := range res.Plan.Allocs {
		must.EqOp(t, "node-3", a.NodeID)
	}
	must.EqOp(t, 3, res.Checks, must.Sprint("only the node with docker is asked"))

	exec := writerJob("web", "")
	exec.TaskGroups[0].Count = 4
	res = w.run(exec)
	must.SliceEmpty(t, res.Failures)
	nodes := map[string]bool{}
	for _, a := range res.Plan.Allocs {
		nodes[a.NodeID] = true
	}
	must.MapLen(t, 4, nodes, must.Sprint("exec runs on every node, drivers reported or not"))
}

// TestPlanner_Plan_NoHealthyDocker: the failure says how many nodes lack
// docker and how many have it unhealthy, and why.
func TestPlanner_Plan_NoHealthyDocker(t *testing.T) {
	cases := []struct {
		name  string
		nodes map[string]*structs.DriverInfo
		want  []string
	}{
		{"none has docker or it is down", map[string]*structs.DriverInfo{"node-1": nil, "node-2": nil, "node-3": unhealthyDocker(engineDown)},
			[]string{"no ready node has a healthy docker driver (2 nodes without docker, 1 with docker unhealthy: " + engineDown + ")"}},
		{"one node without docker", map[string]*structs.DriverInfo{"node-1": nil},
			[]string{"no ready node has a healthy docker driver (1 node without docker)"}},
		{"down for different reasons", map[string]*structs.DriverInfo{
			"node-1": unhealthyDocker(engineDown), "node-2": unhealthyDocker(engineDown), "node-3": unhealthyDocker("permission denied"),
			"node-4": unhealthyDocker("")},
			[]string{"no ready node has a healthy docker driver (4 with docker unhealthy: " + engineDown +
				" (2 nodes); no description (1 node); permission denied (1 node))"}},
		{"five reasons", map[string]*structs.DriverInfo{
			"node-1": unhealthyDocker("a"), "node-2": unhealthyDocker("b"), "node-3": unhealthyDocker("c"),
			"node-4": unhealthyDocker("d"), "node-5": unhealthyDocker("e")},
			[]string{"no ready node has a healthy docker driver (5 with docker unhealthy: a (1 node); b (1 node); c (1 node); and 2 more)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			for id, d := range tc.nodes {
				w.dockerNode(id, d)
			}
			res := w.run(dockerJob("db", false))
			must.SliceEmpty(t, res.Plan.Allocs)
			must.SliceLen(t, 1, res.Failures)
			must.EqOp(t, 1, res.Failures[0].Missing)
			must.Eq(t, tc.want, res.Failures[0].Reasons)
			must.EqOp(t, 0, res.Checks, must.Sprint("no node was worth asking"))
		})
	}
}

// TestPlanner_Plan_PrivilegedDocker: a privileged container goes only
// where the client allows them; the reasons name both the nodes without
// docker and the one that refuses privileged containers.
func TestPlanner_Plan_PrivilegedDocker(t *testing.T) {
	w := newWorld(t)
	w.node("node-1")
	w.dockerNode("node-2", healthyDocker())

	res := w.run(dockerJob("plugin", true))
	must.SliceEmpty(t, res.Plan.Allocs)
	must.Eq(t, []string{
		"1 of 2 ready nodes has no healthy docker driver (1 node without docker)",
		`task "db" is privileged; node "node-2" does not allow privileged docker tasks: ` +
			`set driver "docker" { allow_privileged = true } in its agent config (1 node)`,
	}, res.Failures[0].Reasons)

	allowed := healthyDocker()
	allowed.AllowPrivileged = true
	w.dockerNode("node-3", allowed)
	res = w.run(dockerJob("plugin2", true))
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, "node-3", res.Plan.Allocs[0].NodeID)
	res = w.run(dockerJob("web", false))
	must.SliceEmpty(t, res.Failures, must.Sprint("an unprivileged container needs no allow_privileged"))
}

// TestPlanner_Plan_DockerCaps: a task that adds capabilities goes only
// where the client's allow_caps holds them all.
func TestPlanner_Plan_DockerCaps(t *testing.T) {
	w := newWorld(t)
	defaults := healthyDocker()
	defaults.AllowCaps = structs.DockerDefaultAllowCaps
	w.dockerNode("node-1", defaults)

	job := dockerJob("plugin", false)
	job.TaskGroups[0].Tasks[0].Config["cap_add"] = []any{"chown", "sys_admin"}
	res := w.run(job)
	must.SliceEmpty(t, res.Plan.Allocs)
	must.Eq(t, []string{`task "db" adds capabilities sys_admin; node "node-1" does not allow them for docker tasks: ` +
		`add them to driver "docker" { allow_caps = [...] } in its agent config (1 node)`}, res.Failures[0].Reasons)

	admin := healthyDocker()
	admin.AllowCaps = []string{"chown", "sys_admin"}
	w.dockerNode("node-2", admin)
	res = w.run(job)
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, "node-2", res.Plan.Allocs[0].NodeID)
}

// TestPlanner_Plan_SystemDockerJobFollowsTheDriver: a system docker job
// runs on each node with docker healthy, and on a node whose docker comes
// back (its client registers it again) at the next auto pass. A system
// job placed somewhere reports no failure for the nodes without docker.
func TestPlanner_Plan_SystemDockerJobFollowsTheDriver(t *testing.T) {
	w := newWorld(t)
	w.dockerNode("node-1", healthyDocker())
	w.dockerNode("node-2", unhealthyDocker(engineDown))
	w.node("node-3")
	job := dockerJob("plugin", false)
	job.Type = structs.JobTypeSystem

	res := w.run(job)
	must.SliceEmpty(t, res.Failures)
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.EqOp(t, "node-1", res.Plan.Allocs[0].NodeID)

	w.dockerNode("node-2", healthyDocker())
	stored, err := w.st.JobByID(nil, structs.DefaultNamespace, job.ID)
	must.NoError(t, err)
	again, err := w.planner.Plan(w.st, stored, Auto)
	must.NoError(t, err)
	must.SliceEmpty(t, again.Failures)
	must.SliceLen(t, 1, again.Plan.Allocs)
	must.EqOp(t, "node-2", again.Plan.Allocs[0].NodeID)
}

// TestPlanner_Plan_DockerOnANodeThatRegistersAgain: the same node with
// docker down, then registered again with docker healthy: the stored
// node's drivers are what the planner reads.
func TestPlanner_Plan_DockerOnANodeThatRegistersAgain(t *testing.T) {
	w := newWorld(t)
	w.dockerNode("node-1", unhealthyDocker(engineDown))
	res, err := w.planner.Plan(w.st, dockerJob("db", false), Run)
	must.NoError(t, err)
	must.SliceLen(t, 1, res.Failures)

	w.dockerNode("node-1", healthyDocker())
	res, err = w.planner.Plan(w.st, dockerJob("db", false), Run)
	must.NoError(t, err)
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, "node-1", res.Plan.Allocs[0].NodeID)
}

// TestJobWatcher_DockerJobPlacedWhenDockerComesBack: a docker job that
// found no healthy docker waits; the node's client registering it again
// with docker healthy is a node change the job watcher acts on, unasked.
func TestJobWatcher_DockerJobPlacedWhenDockerComesBack(t *testing.T) {
	w := newWorld(t)
	w.dockerNode("node-1", unhealthyDocker(engineDown))
	jw := newWatcher(t, w)
	must.SliceLen(t, 1, w.run(dockerJob("db", false)).Failures)
	must.Eq(t, []string{"db"}, pass(t, jw, true))
	must.SliceEmpty(t, w.allocs("db", live))

	w.dockerNode("node-1", healthyDocker())
	must.Eq(t, []string{"db"}, pass(t, jw, false))
	placed := w.allocs("db", live)
	must.SliceLen(t, 1, placed)
	must.EqOp(t, "node-1", placed[0].NodeID)
}

// TestPlanner_Plan_DockerHostNetwork: a task on the host's network goes
// only where the client allows it; bridge (the default) goes anywhere.
func TestPlanner_Plan_DockerHostNetwork(t *testing.T) {
	w := newWorld(t)
	w.dockerNode("node-1", healthyDocker())
	job := dockerJob("db", false)
	job.TaskGroups[0].Tasks[0].Config["network_mode"] = "host"
	res := w.run(job)
	must.SliceEmpty(t, res.Plan.Allocs)
	must.Eq(t, []string{`task "db" asks for network_mode = "host"; node "node-1" does not allow docker tasks on the host's network: ` +
		`set driver "docker" { allow_host_network = true } in its agent config, or leave network_mode out (bridge) (1 node)`},
		res.Failures[0].Reasons)

	allowed := healthyDocker()
	allowed.AllowHostNetwork = true
	w.dockerNode("node-2", allowed)
	res = w.run(job)
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, "node-2", res.Plan.Allocs[0].NodeID)
	res = w.run(dockerJob("web", false))
	must.SliceEmpty(t, res.Failures, must.Sprint("bridge needs nothing"))
}

// TestPlanner_Plan_DockerRoot: a container whose user is root goes only
// where the client allows root tasks or its engine remaps root; so does
// a docker plugin task that names no user.
func TestPlanner_Plan_DockerRoot(t *testing.T) {
	w := newWorld(t)
	w.dockerNode("node-1", healthyDocker())
	job := dockerJob("db", false)
	job.TaskGroups[0].Tasks[0].User = "0:0"
	res := w.run(job)
	must.SliceEmpty(t, res.Plan.Allocs)
	must.SliceLen(t, 1, res.Failures[0].Reasons)
	must.StrHasPrefix(t, `task "db" would run as root in its container (user = "0:0"); node "node-1" does not allow root tasks `+
		`and its Docker engine does not remap root`, res.Failures[0].Reasons[0])

	remapped := healthyDocker()
	remapped.UserNamespaces = true
	w.dockerNode("node-2", remapped)
	res = w.run(job)
	must.SliceEmpty(t, res.Failures)
	must.EqOp(t, "node-2", res.Plan.Allocs[0].NodeID)

	job = dockerJob("web", false)
	job.TaskGroups[0].Tasks[0].User = "65534"
	res = w.run(job)
	must.SliceEmpty(t, res.Failures, must.Sprint("a non-root user needs nothing"))
}
