package server

import (
	"context"

	"github.com/berth-csi/berth/server/scheduler"
	"github.com/berth-csi/berth/structs"
)

// watchJobs runs the leader's job watcher (scheduler.JobWatcher) until
// ctx ends (leadership is lost). It plans under planMu, as Job.Register
// does, and writes its plans through raft.
func (s *Server) watchJobs(ctx context.Context) {
	cfg := scheduler.DefaultJobWatcherConfig()
	cfg.State = s.State
	cfg.Apply = func(plan *structs.PlanApplyRequest) error {
		_, _, err := raftApply[any](s, structs.PlanApplyRequestType, plan.ForRaft())
		return err
	}
	cfg.PlanLock = &s.planMu
	cfg.Logger = s.logger
	cfg.JobMaxCount = s.config.JobMaxCount
	w, err := scheduler.NewJobWatcher(cfg)
	if err != nil {
		s.logger.Error("job watcher not started", "error", err)
		return
	}
	w.Run(ctx)
}
