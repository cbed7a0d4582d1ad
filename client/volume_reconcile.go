package client

import (
	"context"
	"time"

	"github.com/berth-csi/berth/client/volumemanager"
)

// reconcileInterval is how often the reconciler looks again with no sync
// to wake it: a plugin that was not running may be back.
const reconcileInterval = 5 * time.Second

// reconcileVolumes unpublishes, and unstages for their last user, the
// volumes this node still has recorded for allocations it no longer runs:
// those lost while it was cut off or down (the servers freed their claims
// without it), those whose runner ended without unmounting everything.
// It looks after every sync of the servers' list, never before the first
// (until then it cannot know what the servers run), and every
// reconcileInterval until ctx ends; an unmount that fails (the plugin is
// not back yet) is tried again the next time.
func (w *allocWatcher) reconcileVolumes(ctx context.Context) {
	ticker := time.NewTicker(reconcileInterval)
	defer ticker.Stop()
	synced := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.reconcileKick:
			synced = true
		case <-ticker.C:
		}
		if synced && w.c.volumes != nil {
			w.reconcileOnce(ctx)
		}
	}
}

// reconcileOnce unmounts every recorded use whose alloc has no runner at
// work.
func (w *allocWatcher) reconcileOnce(ctx context.Context) {
	w.unmountWhere(ctx, func(u volumemanager.Use) bool {
		r := w.runner(u.AllocID)
		return r == nil || isDone(r.Done()) // else its runner mounts or unmounts it
	})
}

// unmountWhere unmounts every recorded use for which which holds; one
// that fails is logged, for the reconciler to try again.
func (w *allocWatcher) unmountWhere(ctx context.Context, which func(volumemanager.Use) bool) {
	for _, u := range w.c.volumes.Uses() {
		if !which(u) {
			continue
		}
		err := w.c.volumes.UnmountVolume(ctx, u.AllocID, u.VolumeID, u.PluginID, u.ExternalVolumeID)
		if err != nil {
			if ctx.Err() == nil {
				w.c.logger.Warn("cannot yet unmount a volume of an allocation this node no longer runs; retrying",
					"alloc_id", u.AllocID, "volume_id", u.VolumeID, "plugin_id", u.PluginID, "error", err)
			}
			continue
		}
		w.c.logger.Info("unmounted a volume of an allocation this node no longer runs", "alloc_id", u.AllocID, "volume_id", u.VolumeID)
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
