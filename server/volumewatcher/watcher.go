package volumewatcher

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// Watcher drives the claims being released to freed; see the package doc.
type Watcher struct {
	deps        Deps
	logger      hclog.Logger
	clock       Clock
	backoff     backoff.Policy
	readBackoff backoff.Policy
	idle        time.Duration
	kick        chan struct{} // buffered: one pending wake
}

// New validates cfg and returns a Watcher that is not running yet.
func New(cfg Config) (*Watcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, st := range []structs.CSIVolumeClaimState{structs.CSIVolumeClaimStateUnpublishing, structs.CSIVolumeClaimStateNodeDetached} {
		telemetry.ClaimReleaseRetries.WithLabelValues(st.String()) // scraped at 0 before the first retry
	}
	return &Watcher{
		deps:        cfg.Deps,
		logger:      cfg.Logger,
		clock:       cfg.Clock,
		backoff:     cfg.Backoff,
		readBackoff: cfg.ReadBackoff,
		idle:        cfg.Idle,
		kick:        make(chan struct{}, 1),
	}, nil
}

// Kick has the watcher look again now. It never blocks: a kick sent while
// the watcher looks, or while it is not running, stays pending.
func (w *Watcher) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// claimKey names one claim being released.
type claimKey struct{ ns, volume, alloc string }

// term is one Run: the steps it started, at most one per claim.
type term struct {
	w     *Watcher
	ctx   context.Context
	steps sync.WaitGroup

	mu       sync.Mutex
	inFlight map[claimKey]bool
	// unsaved are the claims whose last step's checkpoint failed (raft
	// unavailable): not tried again before their time, so that a failing
	// write does not turn into a loop of detach calls.
	unsaved map[claimKey]unsavedStep
}

// unsavedStep is a claim whose checkpoints failed failures times in a row,
// not to be stepped again before at.
type unsavedStep struct {
	at       time.Time
	failures int
}

// Run drives claims until ctx ends (leadership is lost), then waits for
// the steps it started; a step cut short is not checkpointed.
func (w *Watcher) Run(ctx context.Context) {
	t := &term{w: w, ctx: ctx, inFlight: map[claimKey]bool{}, unsaved: map[claimKey]unsavedStep{}}
	defer t.steps.Wait()
	failures := 0
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		wake, err := t.look(ws)
		if err != nil {
			failures++
			wait := w.readBackoff.Delay(failures)
			wake = w.clock.Now().Add(wait)
			w.logger.Error("read volumes releasing claims; retrying", "failures", failures, "retry_in", wait, "error", err)
		} else {
			failures = 0
		}
		w.wait(ctx, ws, wake)
	}
}

// look starts the step of every due claim not already in flight, and
// returns when the next one is due (at most Idle from now).
func (t *term) look(ws memdb.WatchSet) (time.Time, error) {
	store := t.w.deps.State()
	ws.Add(store.AbandonCh()) // a snapshot restore replaced the store
	iter, err := store.CSIVolumesReleasing(ws)
	if err != nil {
		return time.Time{}, err
	}
	now := t.w.clock.Now()
	wake := now.Add(t.w.idle)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		vol := raw.(*structs.CSIVolume)
		for allocID, claim := range vol.PastClaims {
			key := claimKey{vol.Namespace, vol.ID, allocID}
			due := claim.NextAttemptAt
			if u, ok := t.unsavedAt(key); ok && u.After(due) {
				due = u
			}
			if due.After(now) {
				if due.Before(wake) {
					wake = due
				}
				continue
			}
			t.start(key)
		}
	}
	return wake, nil
}

// start makes a claim's step on its own goroutine, unless one is in
// flight. When it is done the watcher looks again: the claim may be due.
func (t *term) start(key claimKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inFlight[key] {
		return
	}
	t.inFlight[key] = true
	t.steps.Go(func() {
		saveErr := t.w.step(t.ctx, key)
		t.mu.Lock()
		delete(t.inFlight, key)
		if saveErr == nil {
			delete(t.unsaved, key)
		} else {
			u := t.unsaved[key]
			u.failures++
			u.at = t.w.clock.Now().Add(t.w.backoff.Delay(u.failures))
			t.unsaved[key] = u
		}
		t.mu.Unlock()
		t.w.Kick()
	})
}

// unsavedAt is when a claim whose checkpoint failed may be stepped again.
func (t *term) unsavedAt(key claimKey) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.unsaved[key]
	return u.at, ok
}

// wait returns on a change to what the last look read, a kick, the clock
// reaching wake, or ctx ending.
func (w *Watcher) wait(ctx context.Context, ws memdb.WatchSet, wake time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case <-ws.WatchCh(wctx):
	case <-w.kick:
	case <-w.clock.At(wake):
	}
}
