package gc

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// BatchRows bounds the rows of one garbage collection raft write (a
// job's rows are never split, so a job with more goes in one of its own).
const BatchRows = 1000

// All are the cutoffs of a collection with every threshold at zero.
var All = structs.GCCutoffs{Alloc: math.MaxUint64, Job: math.MaxUint64, Node: math.MaxUint64}

// Retry spaces the passes after a failed one (its Max is set to the
// interval).
var Retry = backoff.Policy{Initial: time.Second, Jitter: 0.2}

// Config is what garbage collection needs from the server that runs it.
type Config struct {
	// Clock is the loop's only source of time.
	Clock clock.Clock
	// Interval is the time between two passes; the thresholds, how long
	// an allocation, a job and a node must have been unchanged to go.
	Interval                                    time.Duration
	AllocThreshold, JobThreshold, NodeThreshold time.Duration
	// Retry spaces the passes after a failed one, up to Interval.
	Retry backoff.Policy
	// BatchRows bounds the rows of one write.
	BatchRows int
	// Logger gets what each pass removed (at info; at debug when
	// nothing), or why it failed.
	Logger hclog.Logger
	// State is the current state store (a snapshot restore replaces it).
	State func() *state.StateStore
	// Apply writes one batch through raft and answers what the FSM
	// removed.
	Apply func(*structs.GCRequest) (*structs.GCResult, error)
	// NodeRemoved is told of each node a write removed; nil for none.
	NodeRemoved func(nodeID string)
}

// Collector collects garbage.
type Collector struct{ cfg Config }

// New returns a collector, or why cfg is incomplete.
func New(cfg Config) (*Collector, error) {
	var errs []error
	if cfg.Clock == nil || cfg.Logger == nil || cfg.State == nil || cfg.Apply == nil {
		errs = append(errs, errors.New("gc: Clock, Logger, State and Apply are required"))
	}
	if cfg.Interval <= 0 || cfg.BatchRows <= 0 || cfg.Retry.Initial <= 0 {
		errs = append(errs, errors.New("gc: Interval, BatchRows and Retry.Initial must be positive"))
	}
	if cfg.AllocThreshold < 0 || cfg.JobThreshold < 0 || cfg.NodeThreshold < 0 {
		errs = append(errs, errors.New("gc: the thresholds must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Collector{cfg: cfg}, nil
}

// Run collects garbage every Interval until ctx ends (leadership is lost).
func (c *Collector) Run(ctx context.Context) {
	clk, logger := c.cfg.Clock, c.cfg.Logger
	keep := max(c.cfg.AllocThreshold, c.cfg.JobThreshold, c.cfg.NodeThreshold)
	w := &witness{}
	store := c.cfg.State()
	note := func() {
		if st := c.cfg.State(); st != store {
			// A snapshot restore replaced the store: its rows' indexes are
			// another history's, so ages count again from now.
			w, store = &witness{}, st
		}
		if index, err := store.LatestIndex(); err == nil {
			w.note(index, clk.Now(), keep)
		}
	}
	note()
	failures := 0
	for {
		wait := c.cfg.Interval
		if failures > 0 {
			retry := c.cfg.Retry
			retry.Max = wait
			wait = retry.Delay(failures)
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.After(clk, wait):
		}
		note()
		res, err := c.Collect(ctx, c.cutoffs(w, clk.Now()))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			logger.Warn("garbage collection failed; retrying", "error", err, "removed", res.Total())
			continue
		}
		failures = 0
		Log(logger.Info, logger.Debug, res, "garbage collected")
	}
}

// Log logs what a collection removed: with info when it removed
// something, with quiet otherwise.
func Log(info, quiet func(string, ...any), res *structs.GCResult, msg string) {
	log := quiet
	if res.Total() > 0 {
		log = info
	}
	log(msg, "allocs", res.Allocs, "jobs", res.Jobs, "nodes", res.Nodes, "past_claims", res.PastClaims)
}

// cutoffs maps the thresholds to raft indexes at now.
func (c *Collector) cutoffs(w *witness, now time.Time) structs.GCCutoffs {
	return structs.GCCutoffs{
		Alloc: w.indexAt(now.Add(-c.cfg.AllocThreshold)),
		Job:   w.indexAt(now.Add(-c.cfg.JobThreshold)),
		Node:  w.indexAt(now.Add(-c.cfg.NodeThreshold)),
	}
}

// Collect lists what cut allows removing and removes it, one raft write
// per batch, and answers what was removed (also when it fails part way).
func (c *Collector) Collect(ctx context.Context, cut structs.GCCutoffs) (*structs.GCResult, error) {
	total := &structs.GCResult{}
	batches, err := c.cfg.State().GCCandidates(cut, c.cfg.BatchRows)
	if err != nil {
		return total, err
	}
	for _, req := range batches {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, err := c.cfg.Apply(req)
		if err != nil {
			return total, err
		}
		total.Add(res)
		if c.cfg.NodeRemoved == nil {
			continue
		}
		for _, id := range req.Nodes {
			if n, err := c.cfg.State().NodeByID(nil, id); err == nil && n == nil {
				c.cfg.NodeRemoved(id)
			}
		}
	}
	return total, nil
}
