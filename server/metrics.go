package server

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// observeRaftApply records one raftApply of a t entry that began at start.
func observeRaftApply(t structs.MessageType, start time.Time) {
	telemetry.RaftApplyDuration.WithLabelValues(t.String()).Observe(time.Since(start).Seconds())
}

// timedFSM is the FSM as raft sees it: each command entry's apply is
// timed by message type (telemetry.FSMApplyDuration). The timing is here,
// not in package fsm, which must not read the clock; what the FSM
// applies is unchanged.
type timedFSM struct{ *fsm.FSM }

var _ raft.FSM = timedFSM{}

func (f timedFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return f.FSM.Apply(l)
	}
	start := time.Now()
	res := f.FSM.Apply(l)
	telemetry.FSMApplyDuration.WithLabelValues(structs.MessageType(l.Data[0]).String()).Observe(time.Since(start).Seconds())
	return res
}

// countLeaderChanges counts each new raft leader this server sees
// (telemetry.RaftLeaderChanges) until the server shuts down. raft drops an
// observation when the channel is full rather than block; leaders change
// far more slowly than this drains.
func (s *Server) countLeaderChanges() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	s.goFunc(func() {
		defer s.raft.DeregisterObserver(obs)
		for {
			select {
			case <-s.ctx.Done():
				return
			case o := <-ch:
				if lo, _ := o.Data.(raft.LeaderObservation); lo.LeaderID != "" {
					telemetry.RaftLeaderChanges.Inc()
				}
			}
		}
	})
}
