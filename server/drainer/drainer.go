package drainer

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Config is what the drainer needs from the server that runs it.
type Config struct {
	// State is the current state store (a snapshot restore replaces it).
	State func() *state.StateStore
	// Apply writes a drain step through raft; structs.ErrConflict when
	// the drain was cancelled or replaced since the step was decided.
	Apply  func(*structs.NodeUpdateDrainRequest) error
	Clock  clock.Clock
	Logger hclog.Logger
	// Retry spaces the passes after failed ones.
	Retry backoff.Policy
	// Idle is how long the drainer waits, with nothing seen to change,
	// before it looks again anyway.
	Idle time.Duration
	// PluginGrace is how long past a drain's deadline the node's CSI
	// plugins wait for its claims to be released.
	PluginGrace time.Duration
}

// DefaultConfig is the leader's configuration, without its State, Apply
// and PluginGrace.
func DefaultConfig() Config {
	return Config{
		Clock:  clock.System{},
		Logger: hclog.NewNullLogger(),
		Retry:  backoff.Policy{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2},
		Idle:   time.Minute,
	}
}

// Drainer is the leader's node drainer. Run is one goroutine; it alone
// touches the fields below the config.
type Drainer struct {
	state       func() *state.StateStore
	apply       func(*structs.NodeUpdateDrainRequest) error
	clock       clock.Clock
	logger      hclog.Logger
	retry       backoff.Policy
	idle        time.Duration
	pluginGrace time.Duration

	store    *state.StateStore // the store the last pass read; another one means a full look
	last     uint64            // the index the last pass read nodes up to
	draining map[string]bool   // IDs of the nodes with a drain under way
	// announced holds, by node, the drain (its StartedAt) whose wait for
	// the node's claims was written as an event this term.
	announced map[string]time.Time
}

// New returns a drainer, or why cfg is incomplete.
func New(cfg Config) (*Drainer, error) {
	var errs []error
	if cfg.State == nil || cfg.Apply == nil || cfg.Clock == nil || cfg.Logger == nil {
		errs = append(errs, errors.New("drainer: State, Apply, Clock and Logger are required"))
	}
	if cfg.Retry.Initial <= 0 || cfg.Idle <= 0 {
		errs = append(errs, errors.New("drainer: Retry.Initial and Idle must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Drainer{state: cfg.State, apply: cfg.Apply, clock: cfg.Clock, logger: cfg.Logger,
		retry: cfg.Retry, idle: cfg.Idle, pluginGrace: cfg.PluginGrace}, nil
}

// Run makes passes until ctx ends: each after a change to what the last
// one read, a deadline, the idle wait, or a failure's backoff.
func (d *Drainer) Run(ctx context.Context) {
	d.store, d.last = nil, 0
	d.draining, d.announced = map[string]bool{}, map[string]time.Time{}
	failures := 0
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		wake, err := d.pass(ctx, ws)
		if err != nil {
			failures++
			wait := d.retry.Delay(failures)
			wake = d.clock.Now().Add(wait)
			d.store = nil // look at every node again
			d.logger.Error("drain nodes; retrying", "failures", failures, "retry_in", wait, "error", err)
		} else {
			failures = 0
		}
		d.wait(ctx, ws, wake)
	}
}

// wait returns on a change to what the last pass read, the clock reaching
// wake, or ctx ending.
func (d *Drainer) wait(ctx context.Context, ws memdb.WatchSet, wake time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case <-ws.WatchCh(wctx):
	case <-d.clock.At(wake):
	case <-ctx.Done():
	}
}

// pass brings the set of draining nodes up to date and makes each one's
// next step. It returns when it must look again at the latest: the
// nearest deadline, or the idle wait.
func (d *Drainer) pass(ctx context.Context, ws memdb.WatchSet) (time.Time, error) {
	st := d.state()
	ws.Add(st.AbandonCh())
	now := d.clock.Now()
	wake := now.Add(d.idle)
	upTo, err := st.LatestIndex()
	if err != nil {
		return wake, err
	}
	if _, err := st.IndexWatch(ws, state.TableNodes); err != nil {
		return wake, err
	}
	if err := d.refresh(st); err != nil {
		return wake, err
	}
	d.store, d.last = st, upTo
	ids := make([]string, 0, len(d.draining))
	for id := range d.draining {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if ctx.Err() != nil {
			return wake, nil
		}
		at, err := d.drainNode(ws, st, id, now)
		if err != nil {
			return wake, err
		}
		if !at.IsZero() && at.Before(wake) {
			wake = at
		}
	}
	return wake, nil
}

// refresh updates the set of draining nodes from the nodes written since
// the last pass, or from every node when the store is another.
func (d *Drainer) refresh(st *state.StateStore) error {
	if st != d.store {
		nodes, err := st.DrainingNodes(nil)
		if err != nil {
			return err
		}
		d.draining = map[string]bool{}
		for _, n := range nodes {
			d.draining[n.ID] = true
		}
		return nil
	}
	iter, err := st.NodesModifiedAfter(nil, d.last)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.Draining() {
			d.draining[n.ID] = true
		} else {
			delete(d.draining, n.ID)
		}
	}
	return nil
}
