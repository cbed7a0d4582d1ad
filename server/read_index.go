package server

import (
	"context"
	"time"

	"github.com/berth-csi/berth/structs"
)

// followerReadWait bounds the leader's answer to a follower that asks
// for its read index; followerCatchUp how long the follower then waits to
// have applied that much itself before it forwards the read instead (the
// leader has it at once: a forward is a loopback hop, a wait for the
// next commit notice is up to two raft commit timeouts).
const (
	followerReadWait = 2 * time.Second
	followerCatchUp  = 2 * time.Millisecond
)

// followerRead makes a read that must not be stale safe to serve from this
// follower's own state (the read-index protocol): it asks the leader for
// its read index (Status.ReadIndex: every write acknowledged before now is
// at or below it), then waits until this server has applied that index.
// A read served so sees every write acknowledged before it began, without
// shipping the answer from the leader. On any error the caller forwards
// the read as before.
//
// A blocking query (MinQueryIndex > 0) waits as long as the leader's
// answer may take: it is never forwarded for a lag. A list waits longer
// before it is forwarded: up to two commit timeouts,
// the most a follower trails the leader's commit notice. Its answer is
// large (thousands of rows), and shipping it from the leader costs more
// than the wait: right after a burst of writes, a forwarded list of
// 5,000 volumes took 5 times one served here.
func (s *Server) followerRead(leader string, minQueryIndex uint64, list bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, followerReadWait)
	defer cancel()
	var index uint64
	if err := s.pool.Call(ctx, leader, "Status.ReadIndex", &structs.GenericRequest{}, &index); err != nil {
		return err
	}
	// A read that answers at once (not a blocking query that waits past
	// what the leader has) is forwarded rather than kept waiting for this
	// follower to hear of the leader's last commit.
	catchUp := followerReadWait
	switch {
	case minQueryIndex > 0:
		// A blocking query waits anyway: forwarded, it would hold one of
		// the few streams this server has to the leader for as long as
		// it blocks, and a fleet's allocation watches would take them
		// all, queueing every write forwarded behind them.
	case list:
		catchUp = followerCatchUp + 2*s.config.RaftCommitTimeout
	default:
		catchUp = followerCatchUp
	}
	wctx, wcancel := context.WithTimeout(ctx, catchUp)
	defer wcancel()
	if err := s.fsm.WaitApplied(wctx, index); err != nil {
		return structs.NewError(structs.CodeUnavailable, "server %s has not applied index %d within %s", s.config.NodeName, index, catchUp)
	}
	s.followerReads.Add(1)
	return nil
}

// ReadIndex answers, on the leader, the index a read elsewhere must have
// applied to see every write acknowledged before this call: the last
// command its FSM applied (a write is acknowledged only once applied),
// once it has confirmed with a quorum that it still leads
// (a deposed leader that does not know it yet must not answer). Open to
// every caller: an index tells nothing.
func (st *Status) ReadIndex(_ *structs.GenericRequest, reply *uint64) error {
	s := st.srv
	if !s.isLeader() {
		return structs.NewError(structs.CodeUnavailable, "Status.ReadIndex: server %s is not the leader; retry", s.config.NodeName)
	}
	if err := s.waitConsistentReads("Status.ReadIndex"); err != nil {
		return err
	}
	if err := s.raft.VerifyLeader().Error(); err != nil {
		return structs.NewError(structs.CodeUnavailable, "Status.ReadIndex: server %s could not confirm its leadership: %v; retry", s.config.NodeName, err)
	}
	*reply = s.fsm.AppliedIndex()
	return nil
}
