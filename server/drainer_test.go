package server

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// drainWorld is one server (real raft) on a fake clock with node-1, which
// runs the hostpath node plugin and root tasks and has no client behind
// it (the test reports for it), and the volume "data".
func drainWorld(t *testing.T) (*Server, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.New()
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute; c.Clock = clk })
	drainRegisterNode(t, s, "node-1")
	var vresp structs.CSIVolumeRegisterResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &vresp))
	return s, clk
}

func drainRegisterNode(t *testing.T, s *Server, id string) {
	t.Helper()
	n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
	n.AllowRootTasks = true
	schedRegisterNode(t, s, n)
}

// pluginJobOf runs the hostpath plugin on every node; systemJobOf a plain
// task on every node.
func pluginJobOf(id string) *structs.Job {
	j := statetest.PluginJob(id, "hostpath")
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	return j
}

func systemJobOf(id string) *structs.Job {
	j := statetest.Job(id)
	j.Type = structs.JobTypeSystem
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	return j
}

func registerJob(t *testing.T, s *Server, job *structs.Job) []*structs.AllocListStub {
	t.Helper()
	var resp structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
	must.SliceEmpty(t, resp.Failures)
	return resp.Placed
}

// report is the allocations' client saying they are in status.
func report(t *testing.T, s *Server, status string, ids ...string) {
	t.Helper()
	var allocs []*structs.Allocation
	for _, id := range ids {
		allocs = append(allocs, &structs.Allocation{ID: id, ClientStatus: status})
	}
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: allocs}, &structs.GenericResponse{}))
}

func allocNow(t *testing.T, s *Server, id string) *structs.Allocation {
	t.Helper()
	a, err := s.State().AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a)
	return a
}

func nodeNow(t *testing.T, s *Server, id string) *structs.Node {
	t.Helper()
	n, err := s.State().NodeByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, n)
	return n
}

func stopped(t *testing.T, s *Server, id string) bool {
	return allocNow(t, s, id).DesiredStatus == structs.AllocDesiredStatusStop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drainEvents are the node's drain events, oldest first.
func drainEvents(t *testing.T, s *Server, nodeID string) []string {
	t.Helper()
	var out []string
	for _, e := range nodeNow(t, s, nodeID).Events {
		if e.Subsystem == structs.NodeEventSubsystemDrain {
			out = append(out, e.Message)
		}
	}
	return out
}

func hasEvent(t *testing.T, s *Server, nodeID, prefix string) bool {
	for _, m := range drainEvents(t, s, nodeID) {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

func startDrain(t *testing.T, s *Server, nodeID string, spec structs.DrainSpec) {
	t.Helper()
	var resp structs.NodeDrainUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: nodeID, DrainSpec: &spec}, &resp))
	must.Positive(t, resp.NodeModifyIndex)
}

// liveOn lists the job's allocations on nodeID not stopped.
func liveOn(t *testing.T, s *Server, jobID, nodeID string) []*structs.Allocation {
	t.Helper()
	iter, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	must.NoError(t, err)
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); a.NodeID == nodeID && !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// nodeOneWorkloads places, on node-1 alone, a writer of "data", the
// plugin and a system job, all running; it returns their allocation IDs.
func nodeOneWorkloads(t *testing.T, s *Server) (writer, plugin, system string) {
	t.Helper()
	w := registerJob(t, s, writerJob("writer", "data"))
	p := registerJob(t, s, pluginJobOf("plugin"))
	y := registerJob(t, s, systemJobOf("sys"))
	must.SliceLen(t, 1, w)
	must.SliceLen(t, 1, p)
	must.SliceLen(t, 1, y)
	report(t, s, structs.AllocClientStatusRunning, w[0].ID, p[0].ID, y[0].ID)
	return w[0].ID, p[0].ID, y[0].ID
}

// TestDrainer_WriterThenPluginAfterClaimThenSystem drains a node running a
// writer that holds a claim, the plugin and a system job: the writer is
// stopped first; the plugin only once the claim on the node is freed, the
// system job after it; then the drain is complete, the node stays
// ineligible, and the writer runs on the other node.
func TestDrainer_WriterThenPluginAfterClaimThenSystem(t *testing.T) {
	s, _ := drainWorld(t)
	writer, plugin, system := nodeOneWorkloads(t, s)
	drainRegisterNode(t, s, "node-2")
	waitFor(t, "the system jobs on node-2", func() bool {
		return len(liveOn(t, s, "plugin", "node-2")) == 1 && len(liveOn(t, s, "sys", "node-2")) == 1
	})

	startDrain(t, s, "node-1", structs.DrainSpec{Deadline: time.Hour})
	n := nodeNow(t, s, "node-1")
	must.False(t, n.Schedulable())
	waitFor(t, "the writer stopped", func() bool { return stopped(t, s, writer) })
	must.False(t, stopped(t, s, plugin), must.Sprint("the plugin runs while the writer's claim is held"))
	must.False(t, stopped(t, s, system))

	// The writer's client reports it dead: its claim starts releasing,
	// but no client behind node-1 unpublishes it, so it is not freed.
	report(t, s, structs.AllocClientStatusComplete, writer)
	waitFor(t, "the drain waiting for the claim", func() bool {
		return hasEvent(t, s, "node-1", "waiting for 1 volume claim on the node")
	})
	must.False(t, stopped(t, s, plugin), must.Sprint("the plugin runs while a claim on the node is not freed"))
	must.False(t, stopped(t, s, system))
	vol, err := s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.PastClaims, writer)

	// The claim is freed (node unpublish done while the plugin ran).
	_, _, err = raftApply[[]error](s, structs.CSIVolumeClaimRequestType, &structs.CSIVolumeClaimBatchRequest{
		Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: writer, State: structs.CSIVolumeClaimStateFreed,
			Timestamp: time.Now()}}})
	must.NoError(t, err)
	waitFor(t, "the drain complete", func() bool { return !nodeNow(t, s, "node-1").Draining() })
	p, y := allocNow(t, s, plugin), allocNow(t, s, system)
	must.EqOp(t, structs.AllocDesiredStatusStop, p.DesiredStatus)
	must.EqOp(t, structs.AllocDesiredStatusStop, y.DesiredStatus)
	must.Less(t, y.ModifyIndex, p.ModifyIndex, must.Sprint("the plugin is stopped before the other system job"))
	must.EqOp(t, structs.NodeSchedulingIneligible, nodeNow(t, s, "node-1").SchedulingEligibility)

	events := drainEvents(t, s, "node-1")
	want := []string{"drain started: deadline 1h0m0s", "stopping 1 allocation to move it off the node: writer.db[0]",
		"waiting for 1 volume claim", "no volume claim left on the node; stopping 1 allocation of CSI plugins: plugin.web[",
		"stopping 1 allocation of system jobs: sys.web[", "drain complete: no allocation left to stop"}
	must.SliceLen(t, len(want), events, must.Sprintf("events: %q", events))
	for i, w := range want {
		must.StrHasPrefix(t, w, events[i])
	}

	// The writer moved; nothing was placed on node-1 again.
	waitFor(t, "the writer placed on node-2", func() bool { return len(liveOn(t, s, "writer", "node-2")) == 1 })
	for _, job := range []string{"writer", "plugin", "sys"} {
		must.SliceEmpty(t, liveOn(t, s, job, "node-1"), must.Sprintf("job %s on the drained node", job))
	}
}

// TestDrainer_DeadlineStopsWhatRemains: a writer whose claim is not
// freed holds the plugin back; at the deadline the system job is stopped
// at once, and the plugin still waits for the claim (it must unmount it),
// then goes once it is freed.
func TestDrainer_DeadlineStopsWhatRemains(t *testing.T) {
	s, clk := drainWorld(t)
	writer, plugin, system := nodeOneWorkloads(t, s)
	startDrain(t, s, "node-1", structs.DrainSpec{Deadline: time.Hour})
	waitFor(t, "the writer stopped", func() bool { return stopped(t, s, writer) })
	waitFor(t, "the drain waiting for the claim", func() bool {
		return hasEvent(t, s, "node-1", "waiting for 1 volume claim on the node")
	})
	must.False(t, stopped(t, s, plugin), must.Sprint("before the deadline the plugin waits for the claim"))

	clk.Advance(time.Hour)
	waitFor(t, "the deadline's step", func() bool {
		return hasEvent(t, s, "node-1", "deadline reached: stopping the 1 allocation left")
	})
	must.True(t, stopped(t, s, system))
	must.False(t, stopped(t, s, plugin), must.Sprint("past the deadline too, the plugin stays while the claim needs it"))
	must.True(t, hasEvent(t, s, "node-1", "the CSI plugins wait up to 1m0s more for 1 volume claim"))

	_, _, err := raftApply[[]error](s, structs.CSIVolumeClaimRequestType, &structs.CSIVolumeClaimBatchRequest{
		Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: writer, State: structs.CSIVolumeClaimStateFreed,
			Timestamp: time.Now()}}})
	must.NoError(t, err)
	waitFor(t, "the drain complete", func() bool { return !nodeNow(t, s, "node-1").Draining() })
	must.True(t, stopped(t, s, plugin))
}

// TestDrainer_DeadlineGraceStopsThePlugin: a claim that is never released
// keeps the plugin only for the grace past the deadline.
func TestDrainer_DeadlineGraceStopsThePlugin(t *testing.T) {
	s, clk := drainWorld(t)
	writer, plugin, _ := nodeOneWorkloads(t, s)
	startDrain(t, s, "node-1", structs.DrainSpec{Deadline: time.Hour})
	waitFor(t, "the writer stopped", func() bool { return stopped(t, s, writer) })
	clk.Advance(time.Hour)
	waitFor(t, "the deadline's step", func() bool {
		return hasEvent(t, s, "node-1", "deadline reached: stopping the 1 allocation left")
	})
	must.False(t, stopped(t, s, plugin))
	clk.Advance(DefaultConfig().DrainPluginGrace)
	waitFor(t, "the drain complete", func() bool { return !nodeNow(t, s, "node-1").Draining() })
	must.True(t, stopped(t, s, plugin))
	must.True(t, hasEvent(t, s, "node-1", "the grace past the deadline is over: stopping 1 allocation of CSI plugins with 1 volume claim not released"))
}

// TestDrainer_RespectsMigrateMaxParallel: three allocations of a group
// with migrate { max_parallel = 2 } leave a node two at a time: the third
// is stopped only once a replacement runs.
func TestDrainer_RespectsMigrateMaxParallel(t *testing.T) {
	s, _ := drainWorld(t)
	job := statetest.Job("web")
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 2}
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	placed := registerJob(t, s, job)
	must.SliceLen(t, 3, placed)
	report(t, s, structs.AllocClientStatusRunning, allocIDsOf(placed)...)
	drainRegisterNode(t, s, "node-2")

	startDrain(t, s, "node-1", structs.DrainSpec{})
	waitFor(t, "two replacements placed on node-2", func() bool { return len(liveOn(t, s, "web", "node-2")) == 2 })
	waitFor(t, "the event saying one waits", func() bool {
		return hasEvent(t, s, "node-1", "stopping 2 allocations to move them off the node") &&
			strings.Contains(strings.Join(drainEvents(t, s, "node-1"), "\n"), "(1 more wait for migrate max_parallel)")
	})
	left := liveOn(t, s, "web", "node-1")
	must.SliceLen(t, 1, left, must.Sprint("two in flight, no more"))

	// One replacement runs: one migration is done, the third may go.
	repl := liveOn(t, s, "web", "node-2")
	report(t, s, structs.AllocClientStatusRunning, repl[0].ID)
	waitFor(t, "the third stopped", func() bool { return stopped(t, s, left[0].ID) })
	waitFor(t, "the drain complete", func() bool { return !nodeNow(t, s, "node-1").Draining() })
	must.SliceEmpty(t, liveOn(t, s, "web", "node-1"))
}

// TestDrainer_IgnoreSystemJobs leaves the system jobs, the plugin among
// them, running; the drain completes once the writer is stopped.
func TestDrainer_IgnoreSystemJobs(t *testing.T) {
	s, _ := drainWorld(t)
	writer, plugin, system := nodeOneWorkloads(t, s)
	startDrain(t, s, "node-1", structs.DrainSpec{IgnoreSystemJobs: true})
	waitFor(t, "the drain complete", func() bool { return !nodeNow(t, s, "node-1").Draining() })
	must.True(t, stopped(t, s, writer))
	must.False(t, stopped(t, s, plugin))
	must.False(t, stopped(t, s, system))
	must.True(t, hasEvent(t, s, "node-1", "drain complete: only system jobs left"))
}

func allocIDsOf(stubs []*structs.AllocListStub) []string {
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	return ids
}
