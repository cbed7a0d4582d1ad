package gc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/gc"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const interval = 5 * time.Minute

// world is a state store that a collector writes to as the FSM would, on
// a fake clock.
type world struct {
	t    *testing.T
	clk  *clocktest.Fake
	logs *testlog.Recorder
	c    *gc.Collector

	mu      sync.Mutex
	store   *state.StateStore
	index   uint64
	fail    int // the next writes to refuse
	writes  []*structs.GCRequest
	removed []string // the nodes NodeRemoved was told of
}

func newWorld(t *testing.T, change func(*gc.Config)) *world {
	t.Helper()
	w := &world{t: t, clk: clocktest.New(), logs: &testlog.Recorder{}, store: statetest.New(t)}
	cfg := gc.Config{
		Clock:          w.clk,
		Interval:       interval,
		AllocThreshold: time.Hour,
		JobThreshold:   time.Hour,
		NodeThreshold:  15 * time.Minute,
		Retry:          backoff.Policy{Initial: time.Second}, // no jitter: the tests await each wait
		BatchRows:      gc.BatchRows,
		Logger:         w.logs.Logger("gc"),
		State:          w.State,
		Apply:          w.apply,
		NodeRemoved: func(id string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.removed = append(w.removed, id)
		},
	}
	if change != nil {
		change(&cfg)
	}
	var err error
	w.c, err = gc.New(cfg)
	must.NoError(t, err)
	return w
}

func (w *world) State() *state.StateStore {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.store
}

func (w *world) apply(req *structs.GCRequest) (*structs.GCResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail > 0 {
		w.fail--
		return nil, errors.New("raft: leadership lost while committing log")
	}
	w.index++
	w.writes = append(w.writes, req)
	return w.store.ApplyGC(w.index, req)
}

// downNode writes a node, then marks it down.
func (w *world) downNode(id string) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	must.NoError(w.t, w.store.UpsertNode(w.index, statetest.Node(id)))
	w.index++
	must.NoError(w.t, w.store.UpdateNodeStatus(w.index, id, structs.NodeStatusDown, 0, nil))
}

func (w *world) has(id string) bool {
	w.t.Helper()
	n, err := w.State().NodeByID(nil, id)
	must.NoError(w.t, err)
	return n != nil
}

func (w *world) nodesRemoved() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.removed...)
}

// run starts Run until the test ends, and waits for its first wait.
func (w *world) run() {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.c.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
	w.clk.AwaitTimer(w.t, w.clk.Now().Add(interval))
}

// tick moves the clock d on and waits until the pass then is done and the
// loop waits next for the clock to reach d+next.
func (w *world) tick(d, next time.Duration) {
	w.t.Helper()
	w.clk.Advance(d)
	w.clk.AwaitTimer(w.t, w.clk.Now().Add(next))
}

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	_, err := gc.New(gc.Config{NodeThreshold: -time.Second})
	must.ErrorContains(t, err, "Clock, Logger, State and Apply are required")
	must.ErrorContains(t, err, "Interval, BatchRows and Retry.Initial must be positive")
	must.ErrorContains(t, err, "the thresholds must not be negative")
}

// TestRun_RemovesANodeDownPastItsThreshold: a node that went down after
// the loop's first look goes at the first pass a threshold after the pass
// that first saw it down, not before; each pass logs what it removed.
func TestRun_RemovesANodeDownPastItsThreshold(t *testing.T) {
	w := newWorld(t, nil)
	w.downNode("old")
	w.run() // first look: "old" is down at the index it saw
	w.downNode("new")

	w.tick(interval, interval) // 5m: the first pass to see "new" down
	must.True(t, w.has("old"), must.Sprint("down for 5m"))
	must.StrContains(t, w.logs.String(), "[DEBUG] gc: garbage collected: allocs=0 jobs=0 nodes=0 past_claims=0\n")
	w.tick(interval, interval) // 10m
	must.True(t, w.has("old"))
	w.tick(interval, interval) // 15m: "old" seen down 15m ago
	must.False(t, w.has("old"))
	must.True(t, w.has("new"), must.Sprint("seen down 10m ago"))
	must.StrContains(t, w.logs.String(), "[INFO]  gc: garbage collected: allocs=0 jobs=0 nodes=1 past_claims=0\n")
	w.tick(interval, interval) // 20m
	must.False(t, w.has("new"))
	must.Eq(t, []string{"old", "new"}, w.nodesRemoved())
}

// TestRun_RetriesAFailedPass: a failed pass is tried again after the
// retry's backoff, doubling, then the loop keeps its interval again.
func TestRun_RetriesAFailedPass(t *testing.T) {
	w := newWorld(t, func(c *gc.Config) { c.NodeThreshold = 0 })
	w.run()
	w.downNode("n1")
	w.mu.Lock()
	w.fail = 2
	w.mu.Unlock()
	w.tick(interval, time.Second)
	must.StrContains(t, w.logs.String(), "[WARN]  gc: garbage collection failed; retrying: error=\"raft: leadership lost while committing log\" removed=0\n")
	w.tick(time.Second, 2*time.Second)
	must.True(t, w.has("n1"))
	w.tick(2*time.Second, interval)
	must.False(t, w.has("n1"))
}

// TestRun_AgesCountAgainAfterARestore: a store that replaces the one the
// loop read (a snapshot restore) is another history: its rows' ages count
// from the first pass that sees it.
func TestRun_AgesCountAgainAfterARestore(t *testing.T) {
	w := newWorld(t, nil)
	for i := range 5 {
		w.downNode(fmt.Sprintf("before-%d", i)) // the first store's indexes run to 10
	}
	w.run()

	restored := statetest.New(t)
	must.NoError(t, restored.UpsertNode(1, statetest.Node("restored")))
	must.NoError(t, restored.UpdateNodeStatus(2, "restored", structs.NodeStatusDown, 0, nil))
	w.mu.Lock()
	w.store, w.index = restored, 2
	w.mu.Unlock()

	w.tick(interval, interval) // 5m: the first pass to see the restored store
	w.tick(interval, interval) // 10m
	w.tick(interval, interval) // 15m: index 2 is below what was seen at 0, of the other store
	must.True(t, w.has("restored"), must.Sprint("down for 15m by the old store's indexes, 10m by its own"))
	w.tick(interval, interval) // 20m
	must.False(t, w.has("restored"))
}

// TestCollect_InBatches: a collection writes BatchRows rows at most at a
// time, tells of each node removed, and stops at a failed write or an
// ended context, answering what it removed so far.
func TestCollect_InBatches(t *testing.T) {
	w := newWorld(t, func(c *gc.Config) { c.BatchRows = 2 })
	for i := range 5 {
		w.downNode(fmt.Sprintf("n%d", i))
	}
	w.mu.Lock()
	w.fail = 0
	w.mu.Unlock()

	res, err := w.c.Collect(context.Background(), gc.All)
	must.NoError(t, err)
	must.Eq(t, structs.GCResult{Nodes: 5}, *res)
	must.SliceLen(t, 3, w.writes)
	for _, req := range w.writes {
		must.LessEq(t, 2, len(req.Nodes))
	}
	must.Eq(t, []string{"n0", "n1", "n2", "n3", "n4"}, w.nodesRemoved())

	for i := range 5 {
		w.downNode(fmt.Sprintf("m%d", i))
	}
	w.writes = nil
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = w.c.Collect(ctx, gc.All)
	must.ErrorIs(t, err, context.Canceled)
	must.Eq(t, structs.GCResult{}, *res)
	must.SliceEmpty(t, w.writes)

	w.c, err = gc.New(gc.Config{Clock: w.clk, Interval: interval, Retry: gc.Retry, BatchRows: 2, Logger: w.logs.Logger("gc"),
		State: w.State, Apply: func(req *structs.GCRequest) (*structs.GCResult, error) {
			if len(w.writes) == 1 {
				return nil, errors.New("raft: leadership lost while committing log")
			}
			return w.apply(req)
		}})
	must.NoError(t, err)
	res, err = w.c.Collect(context.Background(), gc.All)
	must.ErrorContains(t, err, "leadership lost")
	must.Eq(t, structs.GCResult{Nodes: 2}, *res, must.Sprint("the first write's"))
}
