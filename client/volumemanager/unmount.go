package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// UnmountVolume unpublishes the volume for the allocation and, when no
// other allocation on this node uses it, unstages it. It is idempotent: a
// volume or allocation this node does not use it for is nothing to do
// (nil), and an unmount that failed or was cut short (by a crash, too)
// is finished by calling it again: the unpublish and unstage it had
// started are sent again, and a volume whose last allocation is gone but
// which is still staged is unstaged, whichever allocation asks. When
// externalVolumeID is given and is not the external volume in use here
// under volumeID, the caller's volume is not here: nothing to do.
func (m *Manager) UnmountVolume(ctx context.Context, allocID, volumeID, pluginID, externalVolumeID string) error {
	for _, err := range []error{checkComponent("volume ID", volumeID), checkComponent("alloc ID", allocID), CheckPluginID(pluginID)} {
		if err != nil {
			return fmt.Errorf("volume %q for alloc %s: %w", volumeID, allocID, err)
		}
	}
	s := m.newStep(volumeID, allocID, pluginID)
	key := volumeKey{pluginID, volumeID}
	unlock, err := m.locks.Acquire(ctx, key)
	if err != nil {
		return s.fail("wait for the volume's other operations", err)
	}
	defer unlock()

	u := m.get(key)
	if u == nil {
		s.log.Debug("volume not in use on this node: nothing to unmount")
		return nil
	}
	if externalVolumeID != "" && externalVolumeID != u.ExternalVolumeID {
		// Another volume is in use here under the same ID (from another
		// namespace): the caller's is not, and this one is not touched.
		s.log.Warn("another external volume is in use here under this volume ID: nothing to unmount",
			"external_volume_id", externalVolumeID, "in_use_external_volume_id", u.ExternalVolumeID)
		return nil
	}
	a := u.Allocs[allocID]
	if a == nil && len(u.Allocs) > 0 {
		s.log.Debug("volume not in use by this alloc: nothing to unmount")
		return nil
	}
	if a == nil && u.Stage == stageNone {
		// Nothing left to undo; a record like this is not normally kept.
		if err := m.save(key, nil); err != nil {
			return s.fail("record usage", err)
		}
		return nil
	}

	p, err := m.nodePlugin(pluginID)
	if err != nil {
		return s.fail("find plugin", err)
	}
	cc, err := m.dial(ctx, s, p)
	if err != nil {
		return err
	}

	if a != nil {
		if a.State != publishUnpublishing {
			a.State = publishUnpublishing
			if err := m.save(key, u); err != nil {
				return s.fail("record usage", err)
			}
		}
		if a.TaskDevice != "" {
			if err := m.removeTaskDevice(a.TaskDevice); err != nil {
				return s.fail("remove the tasks' device node", err)
			}
		}
		if err := m.call(ctx, s, "NodeUnpublishVolume", func(ctx context.Context) error {
			return cc.NodeUnpublishVolume(ctx, u.ExternalVolumeID, a.PluginTargetPath)
		}); err != nil {
			return err
		}
		// The plugin removes the target it made; one it left (or never
		// made) is removed here if it is an empty dir.
		removeTarget(s, a.TargetPath)
		delete(u.Allocs, allocID)
		if len(u.Allocs) == 0 && u.Stage != stageNone {
			u.Stage = stageUnstaging // recorded with the unpublish: the last user is gone
		}
		next := u
		if len(u.Allocs) == 0 && u.Stage == stageNone {
			next = nil
		}
		if err := m.save(key, next); err != nil {
			return s.fail("record usage", err)
		}
		m.removeAllocDir(s.log, pluginID, allocID)
		s.log.Info("volume unpublished", "target_path", a.TargetPath, "plugin_target_path", a.PluginTargetPath)
		if next == nil {
			return nil
		}
	}
	if len(u.Allocs) > 0 {
		s.log.Debug("volume stays staged for the node's other allocs", "allocs", len(u.Allocs))
		return nil
	}

	if u.Stage != stageUnstaging {
		u.Stage = stageUnstaging
		if err := m.save(key, u); err != nil {
			return s.fail("record usage", err)
		}
	}
	if err := m.call(ctx, s, "NodeUnstageVolume", func(ctx context.Context) error {
		return cc.NodeUnstageVolume(ctx, u.ExternalVolumeID, u.PluginStagingPath)
	}); err != nil {
		return err
	}
	removeEmptyDir(s.log, u.StagingPath)
	if err := m.save(key, nil); err != nil {
		return s.fail("record usage", err)
	}
	s.log.Info("volume unstaged", "staging_path", u.StagingPath, "plugin_staging_path", u.PluginStagingPath)
	return nil
}

// removeTarget removes a target the plugin left behind (the spec makes
// that the plugin's job): an empty dir, or a file such as a block
// device's node. os.Remove takes neither a dir that is not empty nor one
// still mounted on; those are left and logged.
func removeTarget(s *step, path string) {
	err := os.Remove(path)
	switch {
	case err == nil:
		s.log.Debug("removed the target the plugin left", "path", path)
	case !errors.Is(err, os.ErrNotExist):
		s.log.Warn("left a volume target behind", "path", path, "error", err)
	}
}
