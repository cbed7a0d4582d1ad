package volumemanager

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/berth-csi/berth/structs"
)

// publishedUse is one allocation's published use of a volume, as the
// plugin was told its paths.
type publishedUse struct {
	key                     volumeKey
	allocID, externalID     string
	targetPath, stagingPath string
}

// CollectUsage asks each node plugin that offers GET_VOLUME_STATS or
// GET_VOLUME_HEALTH for the usage and condition of every volume published
// on this node: one call at a time per plugin, the plugins in parallel.
// It returns one report per published (volume, allocation), sorted by
// volume then allocation; a failed call is the report's Error. It takes
// no volume's lock, so a mount or an unmount never waits for it; a use
// unpublished while it was asked about is left out, as are the volumes of
// a plugin that does not run here or offers neither capability.
func (m *Manager) CollectUsage(ctx context.Context, now func() time.Time) []*structs.CSIVolumeUsageReport {
	byPlugin := map[string][]publishedUse{}
	m.mu.Lock()
	for key, u := range m.usage {
		for allocID, a := range u.Allocs {
			if a.State != publishPublished {
				continue
			}
			use := publishedUse{key: key, allocID: allocID, externalID: u.ExternalVolumeID, targetPath: a.PluginTargetPath}
			if u.Stage == stageStaged {
				use.stagingPath = u.PluginStagingPath
			}
			byPlugin[key.plugin] = append(byPlugin[key.plugin], use)
		}
	}
	m.mu.Unlock()

	var (
		mu  sync.Mutex
		out []*structs.CSIVolumeUsageReport
		wg  sync.WaitGroup
	)
	for pluginID, uses := range byPlugin {
		wg.Go(func() {
			reports := m.collectPlugin(ctx, pluginID, uses, now)
			mu.Lock()
			out = append(out, reports...)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		if out[i].VolumeID != out[j].VolumeID {
			return out[i].VolumeID < out[j].VolumeID
		}
		return out[i].AllocID < out[j].AllocID
	})
	return out
}

// collectPlugin asks one plugin about its published uses, in turn.
func (m *Manager) collectPlugin(ctx context.Context, pluginID string, uses []publishedUse, now func() time.Time) []*structs.CSIVolumeUsageReport {
	log := m.logger.With("plugin_id", pluginID)
	p, err := m.nodePlugin(pluginID)
	if err != nil {
		return nil // its health says so
	}
	cc, err := m.conns.Get(ctx, p.ID, p.Socket)
	if err != nil {
		log.Debug("volume usage: cannot reach the plugin", "error", err)
		return nil
	}
	caps, err := cc.NodeGetCapabilities(ctx)
	if err != nil {
		log.Debug("volume usage: NodeGetCapabilities failed", "error", err)
		return nil
	}
	if !caps.SupportsStats && !caps.SupportsCondition {
		return nil
	}
	var out []*structs.CSIVolumeUsageReport
	asked := map[volumeKey]*structs.CSIVolumeUsage{} // one call per volume: its other uses here get the same answer
	for _, use := range uses {
		if ctx.Err() != nil {
			return out
		}
		if u, ok := asked[use.key]; ok {
			if m.published(use.key, use.allocID) {
				out = append(out, &structs.CSIVolumeUsageReport{AllocID: use.allocID, VolumeID: use.key.volume, Usage: u.Copy()})
			}
			continue
		}
		usage := &structs.CSIVolumeUsage{}
		var errs []error
		if caps.SupportsStats {
			usage.Bytes, usage.Inodes, err = cc.NodeGetVolumeStats(ctx, use.externalID, use.targetPath, use.stagingPath)
			errs = append(errs, err)
		}
		if caps.SupportsCondition {
			usage.Condition, err = cc.NodeGetVolumeHealth(ctx, use.externalID, use.targetPath, use.stagingPath)
			errs = append(errs, err)
		}
		usage.CollectedAt = now()
		if err := errors.Join(errs...); err != nil {
			usage.Error = structs.Truncate(err.Error(), structs.MaxUsageMessage)
		}
		if !m.published(use.key, use.allocID) {
			continue // unpublished meanwhile: the answer may be about nothing
		}
		asked[use.key] = usage
		if usage.Error != "" {
			log.Debug("volume usage: call failed", "volume_id", use.key.volume, "alloc_id", use.allocID, "error", usage.Error)
		}
		out = append(out, &structs.CSIVolumeUsageReport{AllocID: use.allocID, VolumeID: use.key.volume, Usage: usage})
	}
	return out
}

// published reports whether the volume is still published for allocID.
func (m *Manager) published(key volumeKey, allocID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.usage[key]
	if u == nil {
		return false
	}
	a := u.Allocs[allocID]
	return a != nil && a.State == publishPublished
}
