package server

import (
	"context"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/server/drainer"
	"github.com/berth-csi/berth/structs"
)

// The drainer runs on the leader and empties the nodes being drained, in
// an order that keeps volumes safe: server/drainer.

// clock is the leader's time: Config.Clock, or the wall clock.
func (s *Server) clock() clock.Clock {
	if s.config.Clock != nil {
		return s.config.Clock
	}
	return clock.System{}
}

// runDrainer runs the drainer until ctx ends (leadership is lost).
func (s *Server) runDrainer(ctx context.Context) {
	cfg := drainer.DefaultConfig()
	cfg.State = s.State
	cfg.Apply = func(req *structs.NodeUpdateDrainRequest) error {
		_, _, err := raftApply[any](s, structs.NodeUpdateDrainRequestType, req)
		return err
	}
	cfg.Clock = s.clock()
	cfg.Logger = s.logger.Named("drainer")
	cfg.PluginGrace = s.config.DrainPluginGrace
	d, err := drainer.New(cfg)
	if err != nil {
		s.logger.Error("drainer not started", "error", err)
		return
	}
	d.Run(ctx)
}
