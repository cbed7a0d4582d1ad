package allocrunner

import (
	"context"
	"time"

	"github.com/berth-csi/berth/structs"
)

// nodeExpandTimeout bounds how long a publish waits for the servers to
// expand a volume on this node before the tasks start anyway.
const nodeExpandTimeout = 45 * time.Second

// expandPending finishes a node expansion the volume waits for (the
// servers record one when no node had the volume at a controller expand
// whose plugin asked for it): once the volume is mounted here, it asks
// the servers to have this node expand it (CSIVolume.NodeExpand, which
// calls NodeExpandVolume back on this node and records the capacity),
// before the tasks start. A failure is logged and the tasks start with
// the volume as it is: the servers keep the expansion pending, with the
// failure, and the next publish tries again.
func (r *Runner) expandPending(ctx context.Context, vol *structs.CSIVolume, volumeID string) {
	if vol.NodeExpansion == nil {
		return
	}
	alloc := r.cfg.Alloc
	ctx, cancel := context.WithTimeout(ctx, nodeExpandTimeout)
	defer cancel()
	var reply structs.CSIVolumeNodeExpandResponse
	err := r.callServers(ctx, "CSIVolume.NodeExpand", &structs.CSIVolumeNodeExpandRequest{VolumeID: volumeID, AllocationID: alloc.ID,
		NodeID: r.cfg.NodeID, WriteRequest: structs.WriteRequest{Namespace: alloc.Namespace}}, &reply)
	if err != nil {
		r.logger.Warn("cannot expand the volume on this node; its tasks start with it as it is, and its next publish tries again",
			"volume_id", volumeID, "error", err)
		return
	}
	r.logger.Info("volume's pending node expansion done", "volume_id", volumeID, "expanded", reply.Expanded, "capacity", reply.Capacity)
}
