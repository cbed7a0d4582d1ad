package server

import (
	"context"

	"github.com/berth-csi/berth/server/gc"
	"github.com/berth-csi/berth/structs"
)

// Garbage collection runs on the leader (server/gc): every GCInterval it
// removes what the state's rules allow, thresholds counted from when this
// leader saw the rows' indexes; System.GarbageCollect runs a pass at
// once, with every threshold at zero (gcAll).

// gcAll are the cutoffs of a collection with every threshold at zero.
var gcAll = gc.All

// newGC builds the collector on the leader's clock (Config.Clock).
func (s *Server) newGC() (*gc.Collector, error) {
	return gc.New(gc.Config{
		Clock:          s.clock(),
		Interval:       s.config.GCInterval,
		AllocThreshold: s.config.AllocGCThreshold,
		JobThreshold:   s.config.JobGCThreshold,
		NodeThreshold:  s.config.NodeGCThreshold,
		Retry:          gc.Retry,
		BatchRows:      gc.BatchRows,
		Logger:         s.logger.Named("gc"),
		State:          s.State,
		Apply: func(req *structs.GCRequest) (*structs.GCResult, error) {
			res, _, err := raftApply[*structs.GCResult](s, structs.GCRequestType, req)
			return res, err
		},
		NodeRemoved: s.clearHeartbeat,
	})
}

// gcLoop collects garbage every GCInterval while this server leads.
func (s *Server) gcLoop(ctx context.Context) {
	c, err := s.newGC()
	if err != nil {
		s.logger.Error("garbage collection not started", "error", err)
		return
	}
	c.Run(ctx)
}

// collectGarbage lists what cut allows removing and removes it, one raft
// write per batch, and answers what was removed (also when it fails
// part way).
func (s *Server) collectGarbage(ctx context.Context, cut structs.GCCutoffs) (*structs.GCResult, error) {
	c, err := s.newGC()
	if err != nil {
		return &structs.GCResult{}, err
	}
	return c.Collect(ctx, cut)
}

// logGC logs what a collection removed: with info when it removed
// something, with quiet otherwise.
func logGC(info, quiet func(string, ...any), res *structs.GCResult, msg string) {
	gc.Log(info, quiet, res, msg)
}
