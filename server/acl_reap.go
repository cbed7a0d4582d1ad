package server

import (
	"context"
	"time"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/server/aclreap"
	"github.com/berth-csi/berth/structs"
)

// newACLReaper builds the leader's reaper of expired ACL tokens
// (server/aclreap), on the wall clock: every aclreap.Interval, each
// write one raft entry, the leader's own token kept.
func (s *Server) newACLReaper() (*aclreap.Reaper, error) {
	return aclreap.New(aclreap.Config{
		Clock:    clock.System{},
		Interval: aclreap.Interval,
		Logger:   s.logger,
		State:    s.State,
		Delete: func(req *structs.ACLTokenDeleteRequest) error {
			_, _, err := raftApply[any](s, structs.ACLTokenDeleteRequestType, req)
			return err
		},
		Keep: isLeaderToken,
	})
}

// reapExpiredTokensLoop deletes expired ACL tokens while this server
// leads (with ACLs on): once when it takes office, then every
// aclreap.Interval. An expired token is refused anyway (resolveToken);
// this keeps the table from growing with them.
func (s *Server) reapExpiredTokensLoop(ctx context.Context) {
	if !s.config.ACLEnabled {
		return
	}
	r, err := s.newACLReaper()
	if err != nil {
		s.logger.Error("ACL token reaper not started", "error", err)
		return
	}
	r.Run(ctx)
}

// reapExpiredTokens deletes, in one raft write, the tokens expired at now,
// and returns how many.
func (s *Server) reapExpiredTokens(now time.Time) (int, error) {
	r, err := s.newACLReaper()
	if err != nil {
		return 0, err
	}
	return r.Reap(now)
}
