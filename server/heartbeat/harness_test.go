package heartbeat_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// Every test runs in a synctest bubble on the wall clock
// (clock.System): time moves only when every goroutine of the bubble is
// blocked, so a TTL runs out without sleeping and to the nanosecond.

const ttl = 10 * time.Second

// world is a state store and timers that mark its nodes down in it, as
// the FSM would.
type world struct {
	t      *testing.T
	store  *state.StateStore
	logs   *testlog.Recorder
	timers *heartbeat.Timers

	leading atomic.Bool
	mu      sync.Mutex
	index   uint64
	fail    int      // the next MarkDown calls to refuse
	downs   []marked // the mark-downs written, in order
	refused []*structs.NodeUpdateStatusRequest
}

type marked struct {
	req *structs.NodeUpdateStatusRequest
	at  time.Time
}

// newWorld is a leader's timers (off until Arm) over a store holding
// nodes (ready unless named "down-..." or "init-...").
func newWorld(t *testing.T, nodes ...string) *world {
	t.Helper()
	return newWorldWith(t, nil, nodes...)
}

// newWorldWith is newWorld with the timers' config changed by edit.
func newWorldWith(t *testing.T, edit func(*heartbeat.Config), nodes ...string) *world {
	t.Helper()
	w := &world{t: t, store: statetest.New(t), logs: &testlog.Recorder{}}
	w.leading.Store(true)
	for _, id := range nodes {
		w.addNode(id)
	}
	cfg := heartbeat.Config{
		Clock:    clock.System{},
		TTL:      ttl,
		Grace:    heartbeat.Grace,
		Logger:   w.logs.Logger("solo"),
		State:    func() *state.StateStore { return w.store },
		MarkDown: w.markDown,
		Leading:  w.leading.Load,
	}
	if edit != nil {
		edit(&cfg)
	}
	var err error
	w.timers, err = heartbeat.New(cfg)
	must.NoError(t, err)
	t.Cleanup(w.timers.Disable)
	return w
}

func (w *world) addNode(id string) {
	w.t.Helper()
	n := statetest.Node(id)
	switch {
	case len(id) > 5 && id[:5] == "down-":
		n.Status = structs.NodeStatusDown
	case len(id) > 5 && id[:5] == "init-":
		n.Status = structs.NodeStatusInit
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	must.NoError(w.t, w.store.UpsertNode(w.index, n))
}

func (w *world) markDown(req *structs.NodeUpdateStatusRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail > 0 {
		w.fail--
		w.refused = append(w.refused, req)
		return errors.New("raft: leadership lost while committing log")
	}
	w.index++
	if err := w.store.UpdateNodeStatus(w.index, req.NodeID, req.Status, req.UpdatedAt, req.Event); err != nil {
		return err
	}
	w.downs = append(w.downs, marked{req: req, at: time.Now()})
	return nil
}

// marked lists the nodes marked down so far, in order.
func (w *world) marked() []string {
	var ids []string
	for _, m := range w.written() {
		ids = append(ids, m.req.NodeID)
	}
	return ids
}

// written is the mark-downs written so far, in order.
func (w *world) written() []marked {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]marked(nil), w.downs...)
}

// refusals counts the mark-downs refused so far.
func (w *world) refusals() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.refused)
}

// failNext makes the next n mark-downs fail.
func (w *world) failNext(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail = n
}

func (w *world) status(id string) string {
	w.t.Helper()
	n, err := w.store.NodeByID(nil, id)
	must.NoError(w.t, err)
	return n.Status
}

// after lets d pass and waits until the timers have done what it made
// due.
func after(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
