package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

const (
	// raftApplyTimeout bounds how long a write waits to be committed.
	raftApplyTimeout = 30 * time.Second
	// leaderWait is how long a request waits for an election to finish
	// before it fails with Unavailable.
	leaderWait = 5 * time.Second
	// forwardTimeout bounds a request forwarded to the leader.
	forwardTimeout = 40 * time.Second

	defaultQueryTime = 5 * time.Minute
	maxQueryTime     = 10 * time.Minute
)

// rpcInfo is what every request carries to route it.
type rpcInfo interface {
	IsRead() bool
	AllowStaleRead() bool
	IsForwarded() bool
	SetForwarded()
}

// forward sends the request to the leader when this server must not answer
// it: every write, and reads that do not allow stale answers. done is true
// when the request was forwarded (or could not be), with its error.
func (s *Server) forward(method string, info rpcInfo, args, reply any) (done bool, err error) {
	if info.IsRead() && info.AllowStaleRead() {
		return false, nil
	}
	if s.isLeader() {
		if info.IsRead() {
			return false, s.waitConsistentReads(method)
		}
		return false, nil
	}
	if info.IsForwarded() {
		return true, structs.NewError(structs.CodeUnavailable,
			"%s: forwarded to %s, which is not the leader; retry", method, s.config.NodeName)
	}
	leader, err := s.waitForLeader()
	if err != nil {
		return true, fmt.Errorf("%s: %w", method, err)
	}
	if leader == s.rpcAddr {
		return false, nil
	}
	if info.IsRead() {
		var min uint64
		if q, ok := info.(interface{ MinIndex() uint64 }); ok {
			min = q.MinIndex()
		}
		err := s.followerRead(leader, min, rpcMethods[method].route == toLeaderList)
		if err == nil {
			return false, nil // this server has applied all the read must see
		}
		s.logger.Debug("cannot serve a read from this follower; forwarding it", "method", method, "error", err)
	}
	info.SetForwarded()
	ctx, cancel := context.WithTimeout(s.ctx, forwardTimeout)
	defer cancel()
	return true, s.pool.Call(ctx, leader, method, args, reply)
}

// waitForLeader returns the leader's RPC address, waiting out an election.
func (s *Server) waitForLeader() (string, error) {
	deadline := time.NewTimer(leaderWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if addr := s.leaderAddr(); addr != "" {
			return addr, nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return "", structs.NewError(structs.CodeUnavailable,
				"no cluster leader after %s: are a majority of the servers running and reachable?", leaderWait)
		case <-s.ctx.Done():
			return "", structs.NewError(structs.CodeUnavailable, "server %s is shutting down", s.config.NodeName)
		}
	}
}

// waitConsistentReads holds a read on a new leader until its FSM has
// applied everything earlier leaders committed (the barrier in leaderLoop),
// so a read after a failover never misses a committed write.
func (s *Server) waitConsistentReads(method string) error {
	if s.readyForReads.Load() {
		return nil
	}
	deadline := time.NewTimer(leaderWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.readyForReads.Load() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return structs.NewError(structs.CodeUnavailable,
				"%s: the new leader %s has not caught up with the log after %s; retry", method, s.config.NodeName, leaderWait)
		case <-s.ctx.Done():
			return structs.NewError(structs.CodeUnavailable, "server %s is shutting down", s.config.NodeName)
		}
	}
	return nil
}

// raftApply is the one place a write enters raft and the FSM's untyped
// answer becomes (T, index, error). An error value from the FSM is the
// write's error; any other value must be a T.
func raftApply[T any](s *Server, t structs.MessageType, msg any) (T, uint64, error) {
	var zero T
	withoutTokens(msg) // no caller's secret reaches the raft log
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return zero, 0, structs.NewError(structs.CodeBadRequest, "%s: %v", t, err)
	}
	defer observeRaftApply(t, time.Now())
	future := s.raft.Apply(buf, raftApplyTimeout)
	if err := s.awaitApply(future); err != nil {
		return zero, 0, applyError(t, err)
	}
	switch resp := future.Response().(type) {
	case nil:
		return zero, future.Index(), nil
	case error:
		return zero, future.Index(), resp
	case T:
		return resp, future.Index(), nil
	default:
		return zero, future.Index(), structs.NewError(structs.CodeInternal,
			"%s: the FSM answered %T, not %T", t, resp, zero)
	}
}

// awaitApply waits for an apply's answer, or for the server's shutdown:
// raft gives an applied future no shutdown channel, and one it dropped
// while shutting down (taken from its apply queue, never answered) would
// be waited on forever, and Shutdown with it (seen in a test's cleanup: a
// volume watcher's release step held the leader loop). The future's own
// wait then ends with the goroutine that holds it, at the process's end.
func (s *Server) awaitApply(future raft.ApplyFuture) error {
	done := make(chan error, 1)
	go func() { done <- future.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.ctx.Done():
		select {
		case err := <-done: // answered as the shutdown began
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}

// applyError codes the error of a raft apply by whether the entry may be in
// the log (hashicorp/raft api.go and raft.go say when each is returned):
//   - ErrNotLeader, ErrLeadershipTransferInProgress and ErrEnqueueTimeout
//     answer an entry that never entered the log; ErrAbortedByRestore one
//     whose effects a snapshot restore wiped. Not applied: Unavailable, and
//     the write may be sent again as it is.
//   - ErrLeadershipLost answers an entry that was in the log when this
//     server stopped leading: a majority may have stored it, and the next
//     leader commit it. ErrRaftShutdown cannot say whether the entry was
//     enqueued first. Indeterminate: read before sending it again.
func applyError(t structs.MessageType, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrAbortedByRestore):
		return structs.NewError(structs.CodeUnavailable,
			"%s: %v; the write was not applied: retry it", t, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
		return structs.NewError(structs.CodeIndeterminate,
			"%s: %v; the write may or may not have been applied: read the object before retrying", t, err)
	}
	return fmt.Errorf("%s: raft apply: %w", t, err)
}

// queryFn reads state for a blocking query and sets meta.Index to the
// index its answer reflects.
type queryFn func(ws memdb.WatchSet, st *state.StateStore) error

// blockingQuery runs fn, and when the request carries MinQueryIndex, runs
// it again each time what it read changes, until the answer's index passes
// MinQueryIndex or MaxQueryTime ends (then the current answer is returned).
func (s *Server) blockingQuery(opts *structs.QueryOptions, meta *structs.QueryMeta, fn queryFn) error {
	timeout := opts.MaxQueryTime
	if timeout <= 0 {
		timeout = defaultQueryTime
	}
	if timeout > maxQueryTime {
		timeout = maxQueryTime
	}
	// Jitter spreads the wake-ups of many waiters on one change.
	timeout += rand.N(timeout/16 + 1)
	ctx, cancel := context.WithTimeout(s.queryCtx, timeout)
	defer cancel()
	for {
		st := s.fsm.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		if err := fn(ws, st); err != nil {
			return err
		}
		s.setQueryMeta(meta)
		if meta.Index < 1 {
			meta.Index = 1
		}
		if opts.MinQueryIndex == 0 || meta.Index > opts.MinQueryIndex {
			return nil
		}
		if !opts.AllowStale {
			// A read that must not be stale waits in slices: between
			// them, a server that has lost its leader answers Unavailable
			// rather than keep serving a state no longer current.
			if err := s.waitInContact(ctx, ws); err != nil {
				return err
			}
		} else if err := ws.WatchCtx(ctx); err != nil {
			return nil // timed out or shutting down: answer with what is there
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// contactCheck is how often a blocking read that must not be stale checks,
// while nothing changes, that its server still hears from a leader.
const contactCheck = time.Second

// waitInContact waits for ws to fire or ctx to end (nil either way), and
// every contactCheck makes sure this server still leads or hears from a
// leader (within two heartbeat timeouts). A follower cut off from the
// leader applies nothing, so its waiters would otherwise sit on a frozen
// state for the whole query time; they are told to retry elsewhere.
func (s *Server) waitInContact(ctx context.Context, ws memdb.WatchSet) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch set's goroutines
	fired := ws.WatchCh(wctx)
	tick := time.NewTicker(contactCheck)
	defer tick.Stop()
	for {
		select {
		case <-fired: // a change, or ctx ended
			return nil
		case <-tick.C:
		}
		if s.isLeader() {
			continue
		}
		last := s.raft.LastContact()
		if s.leaderAddr() == "" || last.IsZero() || time.Since(last) > 2*s.config.RaftHeartbeatTimeout {
			return structs.NewError(structs.CodeUnavailable,
				"server %s lost contact with the cluster leader while the query waited; retry it at another server", s.config.NodeName)
		}
	}
}

func (s *Server) setQueryMeta(meta *structs.QueryMeta) {
	if s.isLeader() {
		meta.KnownLeader = true
		meta.LastContact = 0
		return
	}
	meta.KnownLeader = s.leaderAddr() != ""
	if last := s.raft.LastContact(); !last.IsZero() {
		meta.LastContact = time.Since(last)
	}
}

// maxIndex is the highest raft index of the named tables.
func maxIndex(st *state.StateStore, tables ...string) (uint64, error) {
	var max uint64
	for _, t := range tables {
		idx, err := st.Index(t)
		if err != nil {
			return 0, err
		}
		if idx > max {
			max = idx
		}
	}
	return max, nil
}
