package server

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/berth-csi/berth/internal/backoff"
)

// monitorLeadership starts the leader-only work when this server gains
// leadership and stops it, waiting for it, when leadership is lost.
func (s *Server) monitorLeadership() {
	var (
		stop func()
		wg   sync.WaitGroup
	)
	stopLeading := func() {
		if stop != nil {
			stop()
			wg.Wait()
			stop = nil
			s.revokeLeadership()
		}
	}
	defer stopLeading()
	for {
		select {
		case <-s.ctx.Done():
			return
		case isLeader := <-s.raftNotifyCh:
			if !isLeader {
				stopLeading()
				continue
			}
			if stop != nil {
				continue
			}
			ctx, cancel := context.WithCancel(s.ctx)
			stop = cancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.leaderLoop(ctx)
			}()
		}
	}
}

// leaderLoop runs while this server leads: it waits until the FSM has
// applied everything earlier leaders committed, then keeps raft membership
// in line with gossip.
func (s *Server) leaderLoop(ctx context.Context) {
	s.logger.Info("cluster leadership acquired")
	// Every second until the barrier passes or leadership ends.
	barrier := backoff.Policy{Initial: time.Second, Max: time.Second}
	if err := backoff.Retry(ctx, barrier, nil, func(ctx context.Context) error {
		err := s.raft.Barrier(time.Minute).Error()
		if err != nil && ctx.Err() == nil {
			s.logger.Error("leader barrier failed; retrying", "error", err)
		}
		return err
	}); err != nil {
		return // leadership ended
	}
	s.readyForReads.Store(true)
	s.establishLeaderToken(ctx)
	if err := s.armHeartbeats(true); err != nil {
		s.logger.Error("start heartbeat timers", "error", err)
	}
	s.autopilot.Start(ctx)
	// The watchers end with the leadership, before the next term starts
	// its own.
	var watchers sync.WaitGroup
	defer watchers.Wait()
	watchers.Go(func() { s.volumeWatcher.Run(ctx) })
	watchers.Go(func() { s.watchJobs(ctx) })
	watchers.Go(func() { s.runDrainer(ctx) })
	watchers.Go(func() { s.initRootKey(ctx) })
	watchers.Go(func() { s.reapExpiredTokensLoop(ctx) })
	watchers.Go(func() { s.gcLoop(ctx) })

	ticker := time.NewTicker(s.config.ReconcileInterval)
	defer ticker.Stop()
	for {
		s.reconcileMembers(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-s.reconcileCh:
		}
	}
}

func (s *Server) revokeLeadership() {
	s.readyForReads.Store(false)
	s.revokeLeaderToken()
	s.stopHeartbeats()
	<-s.autopilot.Stop()
	s.logger.Info("cluster leadership lost")
}

// reconcileMembers adds alive gossip servers missing from the raft
// configuration (once they show a server certificate, under TLS: see
// verifyMember) and removes servers that left gracefully. Failed servers
// are autopilot's to remove, once it is safe for the quorum.
func (s *Server) reconcileMembers(ctx context.Context) {
	conf, index, err := s.raftConfiguration()
	if err != nil {
		s.logger.Error("read raft configuration", "error", err)
		return
	}
	inRaft := map[raft.ServerID]raft.Server{}
	for _, srv := range conf.Servers {
		inRaft[srv.ID] = srv
	}
	for _, m := range s.servers() {
		id := raft.ServerID(m.ID)
		cur, known := inRaft[id]
		switch m.Status {
		case serf.StatusAlive:
			if known && cur.Address == raft.ServerAddress(m.RPCAddr) {
				continue
			}
			if err := s.verifyMember(ctx, m); err != nil {
				s.logger.Warn("not adding gossip member to raft", "member", m.Name, "addr", m.RPCAddr, "error", err)
				continue
			}
			s.logger.Info("adding server to raft", "member", m.Name, "addr", m.RPCAddr)
			if err := s.raft.AddVoter(id, raft.ServerAddress(m.RPCAddr), index, 0).Error(); err != nil {
				s.logger.Error("add server to raft", "member", m.Name, "error", err)
				return
			}
			conf, index, err = s.raftConfiguration()
			if err != nil {
				return
			}
		case serf.StatusLeft:
			if !known || id == raft.ServerID(s.id) {
				continue
			}
			s.logger.Info("removing server that left", "member", m.Name)
			if err := s.raft.RemoveServer(id, index, 0).Error(); err != nil {
				s.logger.Error("remove server from raft", "member", m.Name, "error", err)
				return
			}
			conf, index, err = s.raftConfiguration()
			if err != nil {
				return
			}
		}
	}
}
