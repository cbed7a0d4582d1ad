package server

import (
	"time"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/structs"
)

// The leader's per-node heartbeat TTL timers live in server/heartbeat: a
// timer that fires marks its node down through raft; a heartbeat resets
// it. Only the leader runs timers; a follower never marks a node down.

// newHeartbeats builds the heartbeat timers, off until the leader arms
// them. They run on the wall clock, whatever Config.Clock says: the
// tests that move that clock by hours keep their nodes up.
func (s *Server) newHeartbeats() (*heartbeat.Timers, error) {
	return heartbeat.New(heartbeat.Config{
		Clock:        clock.System{},
		TTL:          s.config.HeartbeatTTL,
		MaxPerSecond: s.config.MaxHeartbeatsPerSecond,
		Grace:        heartbeat.Grace,
		Logger:       s.logger,
		State:        s.State,
		MarkDown: func(req *structs.NodeUpdateStatusRequest) error {
			_, _, err := raftApply[any](s, structs.NodeUpdateStatusRequestType, req)
			return err
		},
		Leading: func() bool { return s.ctx.Err() == nil && s.isLeader() },
	})
}

// resetHeartbeat restarts a node's TTL timer; a no-op off the leader.
func (s *Server) resetHeartbeat(nodeID string, ttl time.Duration) { s.heartbeats.Reset(nodeID, ttl) }

// heartbeatTTL is the TTL to give node nodeID now: the configured TTL,
// or longer as the fleet, the node counted, grows past it
// (heartbeat.ScaledTTL).
func (s *Server) heartbeatTTL(nodeID string) time.Duration { return s.heartbeats.FleetTTLFor(nodeID) }

// clearHeartbeat stops a node's timer (the node was deregistered).
func (s *Server) clearHeartbeat(nodeID string) { s.heartbeats.Clear(nodeID) }

// armHeartbeats replaces the heartbeat timers by one per node of the
// current state that is not down, TTL plus grace, as a new leader starts
// them. With start it turns the timers on: the leader calls it so once it
// serves consistent reads. Without, it is a no-op while they are off
// (off the leader): a snapshot restore re-arms the leader's for the
// restored nodes.
func (s *Server) armHeartbeats(start bool) error { return s.heartbeats.Arm(start) }

// stopHeartbeats stops every timer when leadership ends.
func (s *Server) stopHeartbeats() { s.heartbeats.Disable() }

// heartbeatExpired marks a node down now, as its timer does when it
// fires: in the same raft write its plugin instances stop counting as
// healthy and its volumes become unschedulable.
func (s *Server) heartbeatExpired(nodeID string) { s.heartbeats.Expire(nodeID) }
