package aclreap

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Interval is how often the leader deletes expired tokens.
const Interval = time.Minute

// Config is what the reaper needs from the server that runs it.
type Config struct {
	// Clock is the reaper's only source of time (clock.System for the
	// wall clock).
	Clock clock.Clock
	// Interval is the time between two reaps (Interval, for the server).
	Interval time.Duration
	// Logger gets what each reap deleted, or why it failed.
	Logger hclog.Logger
	// State is the current state store (a snapshot restore replaces it).
	State func() *state.StateStore
	// Delete deletes tokens through raft.
	Delete func(*structs.ACLTokenDeleteRequest) error
	// Keep names the tokens never deleted, expired or not; nil keeps none.
	Keep func(accessorID string) bool
}

// Reaper deletes expired ACL tokens.
type Reaper struct{ cfg Config }

// New returns a reaper, or why cfg is incomplete.
func New(cfg Config) (*Reaper, error) {
	if cfg.Clock == nil || cfg.Logger == nil || cfg.State == nil || cfg.Delete == nil {
		return nil, errors.New("aclreap: Clock, Logger, State and Delete are required")
	}
	if cfg.Interval <= 0 {
		return nil, errors.New("aclreap: Interval must be positive")
	}
	return &Reaper{cfg: cfg}, nil
}

// Run reaps at once, then every Interval, until ctx ends. Like a
// time.Ticker, it keeps its schedule: a reap that outlasts an interval
// is followed by one at once, then by the next on the schedule.
func (r *Reaper) Run(ctx context.Context) {
	clk, every := r.cfg.Clock, r.cfg.Interval
	tick := clk.Now()
	for {
		if n, err := r.Reap(clk.Now()); err != nil {
			r.cfg.Logger.Warn("cannot delete expired ACL tokens; retrying later", "error", err)
		} else if n > 0 {
			r.cfg.Logger.Info("deleted expired ACL tokens", "count", n)
		}
		tick = tick.Add(every)
		select {
		case <-ctx.Done():
			return
		case <-clk.At(tick):
		}
		if late := clk.Now().Sub(tick); late >= every {
			tick = tick.Add(late / every * every) // the ticks missed are dropped
		}
	}
}

// Reap deletes, in one raft write, the tokens expired at now, and returns
// how many.
func (r *Reaper) Reap(now time.Time) (int, error) {
	it, err := r.cfg.State().ACLTokensByAccessorPrefix(nil, "")
	if err != nil {
		return 0, err
	}
	var expired []string
	for raw := it.Next(); raw != nil; raw = it.Next() {
		t := raw.(*structs.ACLToken)
		if t.Expired(now) && (r.cfg.Keep == nil || !r.cfg.Keep(t.AccessorID)) {
			expired = append(expired, t.AccessorID)
		}
	}
	if len(expired) == 0 {
		return 0, nil
	}
	if err := r.cfg.Delete(&structs.ACLTokenDeleteRequest{AccessorIDs: expired}); err != nil {
		return 0, err
	}
	return len(expired), nil
}
