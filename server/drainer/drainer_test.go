package drainer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/drainer"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const idle = time.Minute

// world is a state store the drainer writes its steps to as the FSM
// would, on a fake clock, with node-1 (running the hostpath node plugin)
// and the volume "data". The test stands in for the scheduler and the
// clients.
type world struct {
	t     *testing.T
	clk   *clocktest.Fake
	store *state.StateStore
	logs  *testlog.Recorder
	d     *drainer.Drainer
	steps chan *structs.NodeUpdateDrainRequest // each step written

	mu     sync.Mutex
	index  uint64
	refuse []error // the next writes' errors
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, clk: clocktest.New(), store: statetest.New(t), logs: &testlog.Recorder{},
		steps: make(chan *structs.NodeUpdateDrainRequest, 16)}
	cfg := drainer.DefaultConfig()
	cfg.State = func() *state.StateStore { return w.store }
	cfg.Apply = w.apply
	cfg.Clock = w.clk
	cfg.Logger = w.logs.Logger("drainer")
	cfg.Retry = backoff.Policy{Initial: time.Second, Max: time.Minute} // no jitter: the tests await each wait
	cfg.Idle = idle
	cfg.PluginGrace = time.Minute
	var err error
	w.d, err = drainer.New(cfg)
	must.NoError(t, err)
	w.write(func(i uint64) error {
		return w.store.UpsertNode(i, statetest.NodeWithPlugin("node-1", "hostpath", false, true, true))
	})
	w.write(func(i uint64) error {
		return w.store.UpsertCSIVolume(i, []*structs.CSIVolume{statetest.Volume("data", "hostpath")})
	})
	return w
}

func (w *world) write(f func(index uint64) error) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	must.NoError(w.t, f(w.index))
}

func (w *world) apply(req *structs.NodeUpdateDrainRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.refuse) > 0 {
		err := w.refuse[0]
		w.refuse = w.refuse[1:]
		return err
	}
	w.index++
	if err := w.store.UpdateNodeDrain(w.index, req); err != nil {
		return err
	}
	w.steps <- req
	return nil
}

// place writes job and n running allocations of its group on node-1
// (named <job>-<i>), and returns their IDs.
func (w *world) place(job *structs.Job, n int) []string {
	w.t.Helper()
	var allocs []*structs.Allocation
	var ids []string
	for i := range n {
		a := statetest.Alloc(fmt.Sprintf("%s-%d", job.ID, i), "node-1")
		a.Job, a.JobID, a.Name = job, job.ID, fmt.Sprintf("%s.web[%d]", job.ID, i)
		allocs = append(allocs, a)
		ids = append(ids, a.ID)
	}
	w.write(func(i uint64) error { return w.store.ApplyPlan(i, &structs.PlanApplyRequest{Job: job, Allocs: allocs}) })
	return ids
}

// claim has alloc claim "data" for writing.
func (w *world) claim(alloc string) {
	w.t.Helper()
	w.write(func(i uint64) error {
		return w.store.CSIVolumeClaimBatch(i, []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: alloc,
			Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken}})[0]
	})
}

// report is the allocations' client saying they are in status.
func (w *world) report(status string, ids ...string) {
	w.t.Helper()
	var allocs []*structs.Allocation
	for _, id := range ids {
		allocs = append(allocs, &structs.Allocation{ID: id, ClientStatus: status})
	}
	w.write(func(i uint64) error { return w.store.UpdateAllocsFromClient(i, allocs, w.clk.Now()) })
}

func (w *world) free(alloc string) {
	w.t.Helper()
	w.write(func(i uint64) error {
		return w.store.CSIVolumeClaimBatch(i, []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: alloc,
			State: structs.CSIVolumeClaimStateFreed, Timestamp: w.clk.Now()}})[0]
	})
}

func (w *world) startDrain(spec structs.DrainSpec) {
	w.t.Helper()
	w.write(func(i uint64) error {
		return w.store.UpdateNodeDrain(i, &structs.NodeUpdateDrainRequest{NodeID: "node-1",
			DrainStrategy: structs.NewDrainStrategy(spec, w.clk.Now())})
	})
}

// run starts the drainer until the test ends.
func (w *world) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.d.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// step waits for the drainer's next step and checks it stops exactly
// stops, says the events with these prefixes, and completes or not.
func (w *world) step(stops []string, complete bool, events ...string) *structs.NodeUpdateDrainRequest {
	w.t.Helper()
	var req *structs.NodeUpdateDrainRequest
	select {
	case req = <-w.steps:
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no drain step; logs:\n%s", w.logs.String())
	}
	must.Eq(w.t, stops, req.Step.StopAllocs)
	must.EqOp(w.t, complete, req.Step.Complete)
	must.SliceLen(w.t, len(events), req.Events)
	for i, e := range events {
		must.StrHasPrefix(w.t, e, req.Events[i].Message)
		must.EqOp(w.t, structs.NodeEventSubsystemDrain, req.Events[i].Subsystem)
		must.Eq(w.t, w.clk.Now(), req.Events[i].Timestamp)
	}
	return req
}

// quiet checks that the drainer, waiting for the clock to reach at,
// wrote nothing.
func (w *world) quiet(at time.Time) {
	w.t.Helper()
	w.clk.AwaitTimer(w.t, at)
	select {
	case req := <-w.steps:
		w.t.Fatalf("unexpected drain step: %+v, events %v", req.Step, req.Events)
	default:
	}
}

func volumeJob(id string, count int) *structs.Job {
	j := statetest.Job(id)
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: "data"}}
	return j
}

func systemJob(id string) *structs.Job {
	j := statetest.Job(id)
	j.Type = structs.JobTypeSystem
	return j
}

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	cfg := drainer.DefaultConfig()
	cfg.Idle = 0
	_, err := drainer.New(cfg)
	must.ErrorContains(t, err, "State, Apply, Clock and Logger are required")
	must.ErrorContains(t, err, "Retry.Initial and Idle must be positive")
}

// TestDrainer_PhasesInOrder: the workloads go first, each group within
// its migrate max_parallel (the next once the first one's replacement
// runs elsewhere); the plugin once no claim on the node is left, said
// once while it waits; then the system jobs; then the drain is complete.
func TestDrainer_PhasesInOrder(t *testing.T) {
	w := newWorld(t)
	web := w.place(volumeJob("web", 2), 2)
	plug := w.place(statetest.PluginJob("plug", "hostpath"), 1)
	sys := w.place(systemJob("sys"), 1)
	w.claim(web[0])
	w.startDrain(structs.DrainSpec{})
	w.run()

	w.step(web[:1], false, "stopping 1 allocation to move it off the node: web.web[0] (web-0) (1 more wait for migrate max_parallel)")
	w.quiet(w.clk.Now().Add(idle))

	// The scheduler places web[0] on node-2 and its client runs it.
	job, err := w.store.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	repl := statetest.Alloc("web-0-again", "node-2")
	repl.Job, repl.JobID, repl.Name = job, "web", "web.web[0]"
	w.write(func(i uint64) error {
		return w.store.ApplyPlan(i, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{repl}})
	})
	w.step(web[1:], false, "stopping 1 allocation to move it off the node: web.web[1] (web-1)")

	w.step(nil, false, "waiting for 1 volume claim on the node to be released before stopping its CSI plugins: data (alloc web-0, taken)")
	w.report(structs.AllocClientStatusComplete, web...)
	w.quiet(w.clk.Now().Add(idle)) // said once
	w.free(web[0])

	w.step(plug, false, "no volume claim left on the node; stopping 1 allocation of CSI plugins: plug.web[0] (plug-0)")
	w.step(sys, false, "stopping 1 allocation of system jobs: sys.web[0] (sys-0)")
	w.step(nil, true, "drain complete: no allocation left to stop")
	n, err := w.store.NodeByID(nil, "node-1")
	must.NoError(t, err)
	must.False(t, n.Draining())
	must.StrContains(t, w.logs.String(), "[INFO]  drainer: drain step: node_id=node-1 stopped=1 complete=false event=")
}

// TestDrainer_DeadlineThenPluginGrace: at the deadline what remains is
// stopped but the plugin, which waits for the claim on the node up to the
// grace; past it, the plugin goes too and the drain is complete.
func TestDrainer_DeadlineThenPluginGrace(t *testing.T) {
	w := newWorld(t)
	web := w.place(volumeJob("web", 2), 2)
	plug := w.place(statetest.PluginJob("plug", "hostpath"), 1)
	sys := w.place(systemJob("sys"), 1)
	w.claim(web[0])
	start := w.clk.Now()
	w.startDrain(structs.DrainSpec{Deadline: time.Hour})
	w.run()

	w.step(web[:1], false, "stopping 1 allocation to move it off the node")
	w.quiet(start.Add(idle)) // the idle wait is nearer than the deadline
	w.clk.Advance(time.Hour)
	w.step([]string{web[1], sys[0]}, false,
		"deadline reached: stopping the 2 allocations left: web.web[1] (web-1), sys.web[0] (sys-0)",
		"the CSI plugins wait up to 1m0s more for 1 volume claim on the node to be released: data (alloc web-0, taken)")
	w.quiet(start.Add(time.Hour + time.Minute)) // the grace's end is nearer than the idle wait

	w.clk.Advance(time.Minute)
	w.step(plug, true,
		"the grace past the deadline is over: stopping 1 allocation of CSI plugins with 1 volume claim not released (data (alloc web-0, taken))",
		"drain complete: no allocation left to stop")
}

// TestDrainer_RefusedAndFailedWrites: a step the store refuses as a
// conflict (the drain changed) waits for the next change; one that fails
// otherwise is retried after the backoff, the store read again.
func TestDrainer_RefusedAndFailedWrites(t *testing.T) {
	w := newWorld(t)
	sys := w.place(systemJob("sys"), 1)
	w.mu.Lock()
	w.refuse = []error{
		structs.NewError(structs.CodeConflict, "the drain was cancelled"),
		errors.New("raft: leadership lost while committing log"),
	}
	w.mu.Unlock()
	w.startDrain(structs.DrainSpec{})
	w.run()

	w.quiet(w.clk.Now().Add(idle))
	must.StrContains(t, w.logs.String(), "[DEBUG] drainer: drain step refused: node_id=node-1 error=")

	w.clk.Advance(idle) // the idle wait's look: its write fails
	w.clk.AwaitTimer(t, w.clk.Now().Add(time.Second))
	logs := w.logs.String()
	must.StrContains(t, logs, "[ERROR] drainer: drain nodes; retrying: failures=1 retry_in=1s error=\"node node-1 drain step: raft: leadership lost while committing log\"")
	must.False(t, strings.Contains(logs, "failures=2"))

	w.clk.Advance(time.Second)
	w.step(sys, false, "stopping 1 allocation of system jobs")
	w.step(nil, true, "drain complete")
}
