package server

import (
	"context"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// The drainer runs on the leader and empties the nodes being drained, in
// an order that keeps volumes safe (drainer_step.go):
//
//  1. service and batch allocations (and any other that uses volumes),
//     at most migrate { max_parallel } of a group in flight at once;
//     the job watcher places their replacements elsewhere, since the
//     node is not schedulable, and the volumewatcher frees their claims
//     once their client reports them dead, while the node's CSI plugin
//     still runs to unpublish and unstage;
//  2. CSI plugin allocations, once no claim on the node is left;
//  3. the other system jobs' allocations (none with IgnoreSystemJobs).
//
// At the drain's deadline whatever remains is stopped at once. When
// nothing is left to stop the drain is complete. Each step is one raft
// write with a node event, which `berth node drain -monitor` shows.
//
// It is driven by the state: every pass registers watches on what it
// read (the nodes table, each draining node, its allocations, its claims,
// the jobs it migrates) and runs again when one fires, or at the next
// deadline, on the injected clock.

// drainerIdle is how long the drainer waits, with nothing seen to
// change, before it looks again anyway.
const drainerIdle = time.Minute

// drainer is the leader's node drainer. run is one goroutine; it alone
// touches the fields below the config.
type drainer struct {
	state  func() *state.StateStore
	apply  func(*structs.NodeUpdateDrainRequest) error
	clock  clock.Clock
	logger hclog.Logger
	retry  backoff.Policy
	idle   time.Duration
	// pluginGrace is Config.DrainPluginGrace.
	pluginGrace time.Duration

	store    *state.StateStore // the store the last pass read; another one means a full look
	last     uint64            // the index the last pass read nodes up to
	draining map[string]bool   // IDs of the nodes with a drain under way
	// announced holds, by node, the drain (its StartedAt) whose wait for
	// the node's claims was written as an event this term.
	announced map[string]time.Time
}

// clock is the leader's time: Config.Clock, or the wall clock.
func (s *Server) clock() clock.Clock {
	if s.config.Clock != nil {
		return s.config.Clock
	}
	return clock.System{}
}

// runDrainer runs the drainer until ctx ends (leadership is lost).
func (s *Server) runDrainer(ctx context.Context) {
	d := &drainer{
		state: s.State,
		apply: func(req *structs.NodeUpdateDrainRequest) error {
			_, _, err := raftApply[any](s, structs.NodeUpdateDrainRequestType, req)
			return err
		},
		clock:  s.clock(),
		logger: s.logger.Named("drainer"),
		retry:  backoff.Policy{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2},
		idle:   drainerIdle,

		pluginGrace: s.config.DrainPluginGrace,
	}
	d.run(ctx)
}

// run makes passes until ctx ends: each after a change to what the last
// one read, a deadline, the idle wait, or a failure's backoff.
func (d *drainer) run(ctx context.Context) {
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
func (d *drainer) wait(ctx context.Context, ws memdb.WatchSet, wake time.Time) {
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
func (d *drainer) pass(ctx context.Context, ws memdb.WatchSet) (time.Time, error) {
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
func (d *drainer) refresh(st *state.StateStore) error {
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
