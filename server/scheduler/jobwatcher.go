package scheduler

import (
	"context"
	"errors"
	"fmt"
	"github.com/berth-csi/berth/internal/clock"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	memdb "github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// The job watcher runs on the leader and places what the cluster can now
// run without anyone asking: a system job's allocation on a node that
// became ready, an allocation that could not be placed before (a claim
// was held, a plugin was not healthy yet), a replacement for an
// allocation lost with its node, the next steps of a rolling update, and
// the replacement of a failed allocation once its group's reschedule
// delay is over (never beyond its attempts). A completed batch
// allocation is done.
//
// It re-plans only the jobs that what changed may let place more (see
// pass), and every job when it has seen no change for Idle, or when its
// state store was replaced: the safety net.

// JobWatcherConfig is what a JobWatcher is given by the server.
type JobWatcherConfig struct {
	// State returns the current state store: a snapshot restore
	// replaces it.
	State func() *state.StateStore
	// Apply writes a plan through raft.
	Apply func(*structs.PlanApplyRequest) error
	// PlanLock is held around each job's pass and the write of its plan:
	// the lock the server's endpoints plan under, so that two passes
	// never plan the same claim.
	PlanLock sync.Locker
	Logger   hclog.Logger
	Clock    Clock
	// JobMaxCount is the most allocations a job may ask for: a job stored
	// over it (before the limit was set, or lowered) is not placed
	// unasked; running it again applies the limit.
	JobMaxCount int
	// Settle is how long the watcher waits after a change before it
	// looks, so that a burst of writes makes one pass.
	Settle time.Duration
	// Idle is how long it waits, with no change seen, before it looks at
	// every job again.
	Idle time.Duration
}

// DefaultJobWatcherConfig returns the timings the leader runs with; the
// server fills in the rest.
func DefaultJobWatcherConfig() JobWatcherConfig {
	return JobWatcherConfig{Clock: SystemClock, Settle: 100 * time.Millisecond, Idle: 30 * time.Second}
}

// Validate reports what the config lacks.
func (c *JobWatcherConfig) Validate() error {
	var errs []error
	if c.State == nil || c.Apply == nil || c.PlanLock == nil || c.Clock == nil {
		errs = append(errs, errors.New("scheduler: the job watcher needs State, Apply, PlanLock and Clock"))
	}
	if c.JobMaxCount < 1 {
		errs = append(errs, errors.New("scheduler: the job watcher's JobMaxCount must be at least 1"))
	}
	if c.Settle < 0 || c.Idle <= 0 {
		errs = append(errs, fmt.Errorf("scheduler: the job watcher's Settle must be 0 or more and Idle more than 0, got %v and %v", c.Settle, c.Idle))
	}
	return errors.Join(errs...)
}

// JobWatcher is the leader's job watcher. Run it on one goroutine.
type JobWatcher struct {
	cfg     JobWatcherConfig
	logger  hclog.Logger
	planner *Planner

	// Run's goroutine alone reads and writes what follows.
	store   *state.StateStore // the store the last pass read; another one means a full pass
	last    uint64            // the index the last pass read changes up to
	waiting map[jobKey]bool   // jobs whose last plan left allocations unplaced
	system  map[jobKey]bool   // system jobs, not stopped
	// updating are the jobs with a rolling update under way, each with
	// when it must be looked at again though nothing is written (a
	// replacement becomes healthy, or reaches its deadline); zero for
	// none.
	updating map[jobKey]time.Time
	failed   map[jobKey]string // why a job's update stopped, logged once
}

// jobKey names a job.
type jobKey struct{ Namespace, ID string }

// NewJobWatcher returns a watcher; Run starts it.
func NewJobWatcher(cfg JobWatcherConfig) (*JobWatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &JobWatcher{cfg: cfg, logger: cfg.Logger.Named("jobwatcher"), planner: NewPlanner(cfg.Clock, cfg.Logger),
		waiting: map[jobKey]bool{}, system: map[jobKey]bool{}, updating: map[jobKey]time.Time{}, failed: map[jobKey]string{}}, nil
}

// Run watches until ctx ends (leadership is lost). Its first pass looks
// at every job.
func (w *JobWatcher) Run(ctx context.Context) {
	full := true
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		ws.Add(ctx.Done())
		if _, err := w.pass(ctx, ws, full); err != nil {
			w.logger.Error("read state; looking at every job after the idle wait", "error", err)
			w.store = nil
		}
		wait, due := w.cfg.Idle, false
		if at := w.nextCheck(); !at.IsZero() {
			if d := at.Sub(w.cfg.Clock.Now()); d < wait {
				wait, due = max(d, 0), true
			}
		}
		timedOut := ws.Watch(clock.After(w.cfg.Clock, wait))
		if ctx.Err() != nil {
			return
		}
		full = timedOut && !due
		select {
		case <-ctx.Done():
			return
		case <-clock.After(w.cfg.Clock, w.cfg.Settle):
		}
	}
}

// nextCheck is the earliest time an updating job must be looked at again,
// zero if none must.
func (w *JobWatcher) nextCheck() time.Time {
	var next time.Time
	for _, at := range w.updating {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}
