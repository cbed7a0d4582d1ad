package server

import (
	"context"

	"github.com/berth-csi/berth/structs"
)

// System serves cluster-wide maintenance.
type System struct{ srv *Server }

// GarbageCollect runs a garbage collection on the leader now, with every
// threshold at zero: whatever the rules allow removing goes (an
// allocation still holding a claim that is not freed stays). It needs a
// management token, and answers what was removed.
func (sy *System) GarbageCollect(ctx context.Context, args *structs.SystemGCRequest, reply *structs.SystemGCResponse) error {
	res, err := sy.srv.collectGarbage(ctx, gcAll)
	logger := sy.srv.logger.Named("gc")
	if err != nil {
		logger.Warn("requested garbage collection failed", "error", err, "removed", res.Total())
		return err
	}
	logGC(logger.Info, logger.Info, res, "garbage collected on request")
	reply.Removed = *res
	reply.Index, err = sy.srv.State().LatestIndex()
	return err
}
