package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// heartbeatGrace is added to the TTL when a new leader starts its timers,
// so clients have time to find it before they are marked down.
const heartbeatGrace = 5 * time.Second

// heartbeats holds the leader's per-node TTL timers. A timer that fires
// marks its node down through raft; a heartbeat resets it. Only the leader
// runs timers; a follower never marks a node down.
type heartbeats struct {
	mu      sync.Mutex
	enabled bool
	timers  map[string]*time.Timer
}

// resetHeartbeat restarts a node's TTL timer; a no-op off the leader.
func (s *Server) resetHeartbeat(nodeID string, ttl time.Duration) {
	h := &s.heartbeats
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	if t, ok := h.timers[nodeID]; ok {
		t.Reset(ttl)
		return
	}
	h.timers[nodeID] = time.AfterFunc(ttl, func() { s.heartbeatExpired(nodeID) })
}

// clearHeartbeat stops a node's timer (the node was deregistered).
func (s *Server) clearHeartbeat(nodeID string) {
	h := &s.heartbeats
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
	}
}

// armHeartbeats replaces the heartbeat timers by one per node of the
// current state that is not down, TTL plus grace, as a new leader starts
// them. With start it turns the timers on: the leader calls it so once it
// serves consistent reads. Without, it is a no-op while they are off
// (off the leader): a snapshot restore re-arms the leader's for the
// restored nodes.
func (s *Server) armHeartbeats(start bool) error {
	h := &s.heartbeats
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = h.enabled || start
	if !h.enabled {
		return nil
	}
	if h.timers == nil {
		h.timers = map[string]*time.Timer{}
	}
	iter, err := s.State().Nodes(nil)
	if err != nil {
		return err
	}
	for _, t := range h.timers {
		t.Stop()
	}
	clear(h.timers)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.Status != structs.NodeStatusDown {
			id := n.ID
			h.timers[id] = time.AfterFunc(s.config.HeartbeatTTL+heartbeatGrace, func() { s.heartbeatExpired(id) })
		}
	}
	return nil
}

// stopHeartbeats stops every timer when leadership ends.
func (s *Server) stopHeartbeats() {
	h := &s.heartbeats
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = false
	for _, t := range h.timers {
		t.Stop()
	}
	h.timers = nil
}

// heartbeatExpired marks a node down: in the same raft write its plugin
// instances stop counting as healthy and its volumes become unschedulable.
func (s *Server) heartbeatExpired(nodeID string) {
	h := &s.heartbeats
	h.mu.Lock()
	if !h.enabled {
		h.mu.Unlock()
		return
	}
	delete(h.timers, nodeID)
	h.mu.Unlock()

	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == structs.NodeStatusDown {
		return
	}
	s.logger.Warn("node missed its heartbeat; marking it down", "node_id", nodeID, "ttl", s.config.HeartbeatTTL)
	req := &structs.NodeUpdateStatusRequest{
		NodeID:    nodeID,
		Status:    structs.NodeStatusDown,
		UpdatedAt: time.Now().UnixNano(),
		Event: &structs.NodeEvent{
			Subsystem: "Heartbeat",
			Message:   fmt.Sprintf("node missed its heartbeat (TTL %s); marked down", s.config.HeartbeatTTL),
			Timestamp: time.Now(),
		},
	}
	if _, _, err := raftApply[any](s, structs.NodeUpdateStatusRequestType, req); err != nil {
		s.logger.Error("mark node down", "node_id", nodeID, "error", err)
		if s.ctx.Err() == nil && s.isLeader() {
			// Try again on the next TTL rather than leave the node up.
			s.resetHeartbeat(nodeID, s.config.HeartbeatTTL)
		}
		return
	}
	// Counted once marked down: a failed write tried again on the next
	// TTL is still one miss.
	telemetry.NodeHeartbeatMisses.Inc()
}
