package server

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/hashicorp/serf/serf"
)

// autopilotDelegate tells autopilot which servers exist and how they are,
// and removes the failed ones it picks.
type autopilotDelegate struct{ s *Server }

var _ autopilot.ApplicationIntegration = (*autopilotDelegate)(nil)

func (s *Server) setupAutopilot() {
	s.autopilot = autopilot.New(s.raft, &autopilotDelegate{s: s},
		autopilot.WithLogger(s.config.Logger.Named("autopilot")),
		autopilot.WithReconcileInterval(2*time.Second),
		autopilot.WithUpdateInterval(time.Second),
	)
}

func (d *autopilotDelegate) AutopilotConfig() *autopilot.Config {
	return &autopilot.Config{
		CleanupDeadServers:   true,
		LastContactThreshold: 2 * time.Second,
		MaxTrailingLogs:      250,
		// A dead voter is removed only while as many voters as
		// bootstrap_expect remain: in a three-server cluster a server that
		// is down or cut off stays a voter (its restart or the partition's
		// heal brings it straight back, and losing a second server still
		// leaves no quorum either way); one replaced by a new server is
		// removed once the new one has joined.
		MinQuorum:               uint(d.s.config.BootstrapExpect),
		ServerStabilizationTime: 5 * time.Second,
	}
}

func (d *autopilotDelegate) NotifyState(*autopilot.State) {}

// FetchServerStats reports this server's own raft stats; other servers'
// are left to autopilot's view of the leader's replication (an absent entry
// is treated as unknown, not unhealthy).
func (d *autopilotDelegate) FetchServerStats(_ context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	out := map[raft.ServerID]*autopilot.ServerStats{}
	if _, ok := servers[raft.ServerID(d.s.id)]; ok {
		st := d.s.raft.Stats()
		term, _ := strconv.ParseUint(st["last_log_term"], 10, 64)
		idx, _ := strconv.ParseUint(st["last_log_index"], 10, 64)
		out[raft.ServerID(d.s.id)] = &autopilot.ServerStats{LastTerm: term, LastIndex: idx}
	}
	return out
}

func (d *autopilotDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	leader := raft.ServerID("")
	if _, id := d.s.raft.LeaderWithID(); id != "" {
		leader = id
	}
	out := map[raft.ServerID]*autopilot.Server{}
	for _, m := range d.s.servers() {
		status := autopilot.NodeUnknown
		switch m.Status {
		case serf.StatusAlive:
			status = autopilot.NodeAlive
		case serf.StatusFailed:
			status = autopilot.NodeFailed
		case serf.StatusLeft:
			status = autopilot.NodeLeft
		}
		id := raft.ServerID(m.ID)
		out[id] = &autopilot.Server{
			ID:          id,
			Name:        m.Name,
			Address:     raft.ServerAddress(m.RPCAddr),
			NodeStatus:  status,
			RaftVersion: 3,
			NodeType:    autopilot.NodeVoter,
			IsLeader:    id == leader,
			Meta:        m.Member.Tags,
		}
	}
	return out
}

// RemoveFailedServer drops a failed server from gossip and raft.
func (d *autopilotDelegate) RemoveFailedServer(srv *autopilot.Server) {
	d.s.logger.Info("removing failed server", "member", srv.Name, "id", srv.ID)
	if err := d.s.serf.RemoveFailedNode(srv.Name); err != nil {
		d.s.logger.Warn("remove failed server from gossip", "member", srv.Name, "error", err)
	}
	if err := d.s.raft.RemoveServer(srv.ID, 0, 0).Error(); err != nil {
		d.s.logger.Error("remove failed server from raft", "member", srv.Name, "error", err)
	}
}
