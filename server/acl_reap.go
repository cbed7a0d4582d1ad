package server

import (
	"context"
	"time"

	"github.com/berth-csi/berth/structs"
)

// aclReapInterval is how often the leader deletes expired tokens.
const aclReapInterval = time.Minute

// reapExpiredTokensLoop deletes expired ACL tokens while this server
// leads: once when it takes office, then every aclReapInterval. An expired
// token is refused anyway (resolveToken); this keeps the table from
// growing with them.
func (s *Server) reapExpiredTokensLoop(ctx context.Context) {
	if !s.config.ACLEnabled {
		return
	}
	tick := time.NewTicker(aclReapInterval)
	defer tick.Stop()
	for {
		if n, err := s.reapExpiredTokens(time.Now()); err != nil {
			s.logger.Warn("cannot delete expired ACL tokens; retrying later", "error", err)
		} else if n > 0 {
			s.logger.Info("deleted expired ACL tokens", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reapExpiredTokens deletes, in one raft write, the tokens expired at now,
// and returns how many.
func (s *Server) reapExpiredTokens(now time.Time) (int, error) {
	it, err := s.State().ACLTokensByAccessorPrefix(nil, "")
	if err != nil {
		return 0, err
	}
	var expired []string
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if t := raw.(*structs.ACLToken); t.Expired(now) && !isLeaderToken(t.AccessorID) {
			expired = append(expired, t.AccessorID)
		}
	}
	if len(expired) == 0 {
		return 0, nil
	}
	req := &structs.ACLTokenDeleteRequest{AccessorIDs: expired}
	if _, _, err := raftApply[any](s, structs.ACLTokenDeleteRequestType, req); err != nil {
		return 0, err
	}
	return len(expired), nil
}
