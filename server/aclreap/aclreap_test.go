package aclreap_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/aclreap"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const leaderToken = "00000000-0000-0000-0000-000000000001"

// world is a state store of tokens and a reaper that deletes from it as
// the FSM would, on a fake clock.
type world struct {
	t     *testing.T
	clk   *clocktest.Fake
	store *state.StateStore
	logs  *testlog.Recorder
	r     *aclreap.Reaper

	mu      sync.Mutex
	index   uint64
	fail    int           // the next deletes to refuse
	slow    time.Duration // each delete moves the clock this much
	deletes chan []string // each delete written
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, clk: clocktest.New(), store: statetest.New(t), logs: &testlog.Recorder{}, deletes: make(chan []string, 16)}
	var err error
	w.r, err = aclreap.New(aclreap.Config{
		Clock:    w.clk,
		Interval: aclreap.Interval,
		Logger:   w.logs.Logger("solo"),
		State:    func() *state.StateStore { return w.store },
		Delete:   w.delete,
		Keep:     func(id string) bool { return id == leaderToken },
	})
	must.NoError(t, err)
	return w
}

func (w *world) delete(req *structs.ACLTokenDeleteRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail > 0 {
		w.fail--
		return errors.New("raft: leadership lost while committing log")
	}
	if w.slow > 0 {
		w.clk.Advance(w.slow)
	}
	w.index++
	if err := w.store.DeleteACLTokens(w.index, req.AccessorIDs); err != nil {
		return err
	}
	w.deletes <- req.AccessorIDs
	return nil
}

// token stores a token that expires at exp (never, when zero).
func (w *world) token(id string, exp time.Time) {
	w.t.Helper()
	tok := &structs.ACLToken{AccessorID: id, SecretHash: "hash-" + id, Name: id, Type: structs.ACLTokenTypeClient}
	if !exp.IsZero() {
		tok.ExpirationTime = &exp
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	must.NoError(w.t, w.store.UpsertACLTokens(w.index, []*structs.ACLToken{tok}))
}

func (w *world) left() []string {
	w.t.Helper()
	it, err := w.store.ACLTokensByAccessorPrefix(nil, "")
	must.NoError(w.t, err)
	var ids []string
	for raw := it.Next(); raw != nil; raw = it.Next() {
		ids = append(ids, raw.(*structs.ACLToken).AccessorID)
	}
	sort.Strings(ids)
	return ids
}

// run starts the reaper's loop until the test ends.
func (w *world) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.r.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (w *world) mustDelete(want ...string) {
	w.t.Helper()
	select {
	case got := <-w.deletes:
		sort.Strings(got)
		must.Eq(w.t, want, got)
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no delete of %v", want)
	}
}

func (w *world) mustNotDelete() {
	w.t.Helper()
	select {
	case got := <-w.deletes:
		w.t.Fatalf("deleted %v", got)
	default:
	}
}

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	_, err := aclreap.New(aclreap.Config{})
	must.ErrorContains(t, err, "Clock, Logger, State and Delete are required")
	_, err = aclreap.New(aclreap.Config{Clock: clocktest.New(), Logger: testlog.Logger(t, "x"),
		State: func() *state.StateStore { return nil }, Delete: func(*structs.ACLTokenDeleteRequest) error { return nil }})
	must.ErrorContains(t, err, "Interval must be positive")
}

// TestReap_DeletesWhatExpiredAtNow: the tokens expired at the time given
// go in one write; those not expired, those that never expire, and the
// kept one stay; nothing expired writes nothing.
func TestReap_DeletesWhatExpiredAtNow(t *testing.T) {
	w := newWorld(t)
	now := w.clk.Now()
	w.token("forever", time.Time{})
	w.token("hour", now.Add(time.Hour))
	w.token("hour-too", now.Add(time.Hour))
	w.token("day", now.Add(24*time.Hour))
	w.token(leaderToken, now.Add(-time.Hour)) // expired, yet kept

	n, err := w.r.Reap(now)
	must.NoError(t, err)
	must.Zero(t, n)
	w.mustNotDelete()

	n, err = w.r.Reap(now.Add(time.Hour)) // expiry is inclusive
	must.NoError(t, err)
	must.EqOp(t, 2, n)
	w.mustDelete("hour", "hour-too")
	must.Eq(t, []string{leaderToken, "day", "forever"}, w.left())

	n, err = w.r.Reap(now.Add(100 * 365 * 24 * time.Hour))
	must.NoError(t, err)
	must.EqOp(t, 1, n)
	w.mustDelete("day")
	must.Eq(t, []string{leaderToken, "forever"}, w.left())
}

func TestReap_FailedWrite(t *testing.T) {
	w := newWorld(t)
	w.token("old", w.clk.Now().Add(-time.Second))
	w.fail = 1
	n, err := w.r.Reap(w.clk.Now())
	must.ErrorContains(t, err, "leadership lost")
	must.Zero(t, n)
	must.Eq(t, []string{"old"}, w.left())
}

// TestRun_ReapsAtOnceThenEveryInterval: the loop reaps as it starts, then
// on each minute of its schedule, with the time of that tick; a failed
// reap is logged and tried again at the next tick.
func TestRun_ReapsAtOnceThenEveryInterval(t *testing.T) {
	w := newWorld(t)
	start := w.clk.Now()
	w.token("expired", start.Add(-time.Second))
	w.token("soon", start.Add(90*time.Second))
	w.token("later", start.Add(3*time.Minute))
	w.run()

	w.mustDelete("expired")
	w.clk.AwaitTimer(t, start.Add(time.Minute))
	must.StrContains(t, w.logs.String(), "[INFO]  solo: deleted expired ACL tokens: count=1\n")
	w.clk.Advance(time.Minute)
	w.clk.AwaitTimer(t, start.Add(2*time.Minute))
	w.mustNotDelete() // "soon" is not yet expired at 1m

	w.mu.Lock()
	w.fail = 1
	w.mu.Unlock()
	w.clk.Advance(time.Minute)
	w.clk.AwaitTimer(t, start.Add(3*time.Minute))
	w.mustNotDelete()
	must.StrContains(t, w.logs.String(), "[WARN]  solo: cannot delete expired ACL tokens; retrying later: error=\"raft: leadership lost while committing log\"\n")

	w.clk.Advance(time.Minute) // 3m: both are expired now
	w.mustDelete("later", "soon")
	w.clk.AwaitTimer(t, start.Add(4*time.Minute))
	must.SliceEmpty(t, w.left())
}

// TestRun_KeepsItsSchedule: a reap that outlasts intervals is followed by
// one at once, then by the next tick of the schedule, as a time.Ticker
// does.
func TestRun_KeepsItsSchedule(t *testing.T) {
	w := newWorld(t)
	start := w.clk.Now()
	w.token("a", start.Add(-time.Second))
	w.token("b", start.Add(time.Second))
	w.slow = 150 * time.Second // the first reap ends at 2m30s
	w.run()
	w.mustDelete("a")
	w.mustDelete("b") // at once, for the tick of 1m missed (and 2m dropped)
	// That reap ended at 5m (2m30s + 2m30s): the ticks of 3m to 5m make
	// one reap at once, then the next is the tick of 6m.
	w.clk.AwaitTimer(t, start.Add(6*time.Minute))
	// A token expiring at 5m30s goes with the tick of 6m, not before.
	w.token("c", start.Add(5*time.Minute+30*time.Second))
	w.mustNotDelete()
	w.clk.Advance(time.Minute)
	w.mustDelete("c")
}
