package volumemanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/structs"
)

// MountRequest asks for a volume to be mounted for an allocation.
type MountRequest struct {
	AllocID          string
	VolumeID         string // berth's volume ID
	ExternalVolumeID string // the plugin's
	PluginID         string
	AccessMode       structs.CSIVolumeAccessMode
	AttachmentMode   structs.CSIVolumeAttachmentMode
	ReadOnly         bool
	MountOptions     *structs.CSIMountOptions
	Secrets          structs.CSISecrets
	VolumeContext    map[string]string
	PublishContext   map[string]string // what ControllerPublishVolume returned, if the plugin attaches
	// Group, when set, is the group of the allocation's non-root tasks
	// that write the volume: see giveGroup.
	Group *MountGroup
}

// MountResult is where the volume is for the allocation.
type MountResult struct {
	// HostPath is the published volume on the host: the dir (or, for a
	// block device, the device file) to bind into the allocation's tasks.
	HostPath string
	// GroupBy says who gave the volume's root to the request's Group:
	// GroupByPlugin, GroupByClient, or "" (no one: no group, a read-only
	// mount, group_policy "none", or the root was the group's already).
	GroupBy string
}

// Who gave a volume's root to its tasks' group.
const (
	GroupByPlugin = "plugin" // volume_mount_group, to a plugin with VOLUME_MOUNT_GROUP
	GroupByClient = "client" // group_policy, after the publish
)

func (r *MountRequest) validate() error {
	if r == nil {
		return fmt.Errorf("%w: no mount request", ErrInvalidRequest)
	}
	errs := []error{
		checkComponent("volume ID", r.VolumeID),
		checkComponent("alloc ID", r.AllocID),
		CheckPluginID(r.PluginID),
	}
	if r.ExternalVolumeID == "" {
		errs = append(errs, fmt.Errorf("%w: the external volume ID is required", ErrInvalidRequest))
	}
	c := structs.CSIVolumeCapability{AccessMode: r.AccessMode, AttachmentMode: r.AttachmentMode}
	if err := c.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidRequest, err))
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("volume %q for alloc %s: %w", r.VolumeID, r.AllocID, err)
		}
	}
	return nil
}

// MountVolume stages the volume on this node if its plugin stages volumes
// (NodeGetCapabilities says STAGE_UNSTAGE_VOLUME) and it is not staged
// yet, then publishes it for the allocation, and returns the host path.
// Mounting a volume already mounted for the allocation returns the same
// path and calls nothing. Each step is recorded before it is taken and
// after it succeeded; a failed mount stays recorded (the allocation still
// counts as a user of the volume), so that UnmountVolume, or a retried
// MountVolume, finishes or undoes it.
func (m *Manager) MountVolume(ctx context.Context, req *MountRequest) (*MountResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	s := m.newStep(req.VolumeID, req.AllocID, req.PluginID)
	key := volumeKey{req.PluginID, req.VolumeID}
	unlock, err := m.locks.Acquire(ctx, key)
	if err != nil {
		return nil, s.fail("wait for the volume's other operations", err)
	}
	defer unlock()

	u := m.get(key)
	if u != nil {
		if err := u.compatible(req); err != nil {
			return nil, s.fail("check usage", err)
		}
		if a := u.Allocs[req.AllocID]; a != nil && a.State == publishPublished {
			if req.Group == nil {
				return &MountResult{HostPath: a.TargetPath}, nil
			}
			// The group's step may not have happened (a crash after the
			// publish was recorded), or its device node may be stale (a
			// reboot since): done again, as after a publish.
			caps, err := m.pluginCaps(ctx, s, req.PluginID)
			if err != nil {
				return nil, err
			}
			return m.afterPublish(s, key, u, a, req, req.groupFor(caps))
		}
	}

	p, err := m.nodePlugin(req.PluginID)
	if err != nil {
		return nil, s.fail("find plugin", err)
	}
	cc, err := m.dial(ctx, s, p)
	if err != nil {
		return nil, err
	}

	paths := pathsFor(m.dataDir, p, req.AllocID, req.VolumeID)
	switch {
	case u == nil:
		u = &volumeUsage{PluginID: req.PluginID, VolumeID: req.VolumeID, ExternalVolumeID: req.ExternalVolumeID,
			AttachmentMode: req.AttachmentMode, Allocs: map[string]*allocUsage{}}
	case len(u.Allocs) == 0:
		u.AttachmentMode = req.AttachmentMode // an unstage left unfinished: no one uses it
	}
	a := u.Allocs[req.AllocID]
	if a == nil {
		// The allocation is a user before anything is done for it.
		a = &allocUsage{State: publishPublishing, AccessMode: req.AccessMode, ReadOnly: req.ReadOnly,
			TargetPath: paths.hostTarget, PluginTargetPath: paths.pluginTarget}
		u.Allocs[req.AllocID] = a
		if err := m.save(key, u); err != nil {
			return nil, s.fail("record usage", err)
		}
	}
	capability := &structs.CSIVolumeCapability{AccessMode: req.AccessMode, AttachmentMode: req.AttachmentMode}
	// The plugin's capabilities decide the stage and the group's step: a
	// volume staged here already, for tasks that need no group, asks
	// nothing more on the claim's path.
	caps := &csi.NodeCapabilities{}
	if u.Stage != stageStaged || req.Group != nil {
		if caps, err = m.nodeCaps(ctx, s, cc); err != nil {
			return nil, err
		}
	}
	group := req.groupFor(caps)

	if u.Stage != stageStaged && caps.RequiresNodeStageVolume {
		if err := m.stage(ctx, s, cc, u, paths, req, capability, group.pluginGroup); err != nil {
			return nil, err
		}
	}

	if err := os.MkdirAll(filepath.Dir(a.TargetPath), 0o750); err != nil {
		return nil, s.fail("create the target's parent dir", err)
	}
	publish := &csi.NodePublishVolumeRequest{
		ExternalVolumeID: u.ExternalVolumeID,
		TargetPath:       a.PluginTargetPath,
		Capability:       capability,
		MountOptions:     req.MountOptions,
		ReadOnly:         req.ReadOnly,
		Secrets:          req.Secrets,
		VolumeContext:    req.VolumeContext,
		PublishContext:   req.PublishContext,
		VolumeMountGroup: group.pluginGroup,
	}
	if u.Stage == stageStaged {
		publish.StagingPath = u.PluginStagingPath
	}
	if err := m.call(ctx, s, "NodePublishVolume", func(ctx context.Context) error {
		return cc.NodePublishVolume(ctx, publish)
	}); err != nil {
		return nil, err
	}
	a.State = publishPublished
	if err := m.save(key, u); err != nil {
		return nil, s.fail("record usage", err)
	}
	s.log.Info("volume published", "target_path", a.TargetPath, "plugin_target_path", a.PluginTargetPath, "readonly", a.ReadOnly)
	return m.afterPublish(s, key, u, a, req, group)
}

// afterPublish gives a published volume to the allocation's tasks' group
// (MountGroup): a block device's node of their own, or the root's group.
// Both are safe to do again: a retried mount of a volume published before
// does them again.
func (m *Manager) afterPublish(s *step, key volumeKey, u *volumeUsage, a *allocUsage, req *MountRequest, group groupUse) (*MountResult, error) {
	res := &MountResult{HostPath: a.TargetPath}
	if group.pluginGroup != "" {
		res.GroupBy = GroupByPlugin
	}
	if group.device {
		dev := m.taskDevicePath(req.AllocID, req.PluginID, req.VolumeID)
		if a.TaskDevice != dev {
			a.TaskDevice = dev // recorded first, so that an unmount removes it whatever happens next
			if err := m.save(key, u); err != nil {
				return nil, s.fail("record usage", err)
			}
		}
		if err := makeTaskDevice(a.TargetPath, dev, req.Group.GID, req.ReadOnly); err != nil {
			return nil, s.fail(fmt.Sprintf("make the block device's node for group %d", req.Group.GID), err)
		}
		res.HostPath, res.GroupBy = dev, GroupByClient
	}
	if group.give {
		changed, err := giveGroup(a.TargetPath, req.Group)
		if err != nil {
			return nil, s.fail(fmt.Sprintf("give the volume's root to group %d (mount_options { group_policy = %q })", req.Group.GID, req.Group.Policy.Or()),
				fmt.Errorf("%w; set group_policy = %q to leave it as the plugin made it", err, structs.GroupPolicyNone))
		}
		if changed {
			res.GroupBy = GroupByClient
			s.log.Info("volume's root given to the tasks' group", "gid", req.Group.GID, "group_policy", req.Group.Policy.Or())
		}
	}
	return res, nil
}

// pluginCaps asks the node plugin pluginID for its capabilities.
func (m *Manager) pluginCaps(ctx context.Context, s *step, pluginID string) (*csi.NodeCapabilities, error) {
	p, err := m.nodePlugin(pluginID)
	if err != nil {
		return nil, s.fail("find plugin", err)
	}
	cc, err := m.dial(ctx, s, p)
	if err != nil {
		return nil, err
	}
	return m.nodeCaps(ctx, s, cc)
}

// stage stages the volume (its plugin stages volumes), recording the
// staging before and after the call. u is updated in place.
func (m *Manager) stage(ctx context.Context, s *step, cc *csi.Client, u *volumeUsage, paths volumePaths,
	req *MountRequest, capability *structs.CSIVolumeCapability, mountGroup string) error {
	// A volume staged before keeps its paths: the plugin must be told the
	// same staging path until the volume is unstaged.
	if u.StagingPath == "" {
		u.StagingPath, u.PluginStagingPath = paths.hostStaging, paths.pluginStaging
	}
	u.Stage = stageStaging
	if err := m.save(u.key(), u); err != nil {
		return s.fail("record usage", err)
	}
	if err := os.MkdirAll(u.StagingPath, 0o750); err != nil {
		return s.fail("create the staging dir", err)
	}
	if err := m.call(ctx, s, "NodeStageVolume", func(ctx context.Context) error {
		return cc.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			ExternalVolumeID: u.ExternalVolumeID,
			StagingPath:      u.PluginStagingPath,
			Capability:       capability,
			MountOptions:     req.MountOptions,
			Secrets:          req.Secrets,
			VolumeContext:    req.VolumeContext,
			PublishContext:   req.PublishContext,
			VolumeMountGroup: mountGroup,
		})
	}); err != nil {
		return err
	}
	u.Stage = stageStaged
	if err := m.save(u.key(), u); err != nil {
		return s.fail("record usage", err)
	}
	s.log.Info("volume staged", "staging_path", u.StagingPath, "plugin_staging_path", u.PluginStagingPath)
	return nil
}

// compatible refuses a mount that contradicts the volume's use here.
func (u *volumeUsage) compatible(req *MountRequest) error {
	if u.ExternalVolumeID != req.ExternalVolumeID {
		return fmt.Errorf("%w: it is in use here as external volume %q, not %q", ErrConflict, u.ExternalVolumeID, req.ExternalVolumeID)
	}
	if len(u.Allocs) > 0 && u.AttachmentMode != req.AttachmentMode {
		return fmt.Errorf("%w: it is in use here as %s, not %s", ErrConflict, u.AttachmentMode, req.AttachmentMode)
	}
	a := u.Allocs[req.AllocID]
	switch {
	case a == nil:
	case a.State == publishUnpublishing:
		return fmt.Errorf("%w: its unmount for this alloc has started; finish it first", ErrConflict)
	case a.AccessMode != req.AccessMode || a.ReadOnly != req.ReadOnly:
		return fmt.Errorf("%w: it is mounted for this alloc as %s read_only=%t, not %s read_only=%t",
			ErrConflict, a.AccessMode, a.ReadOnly, req.AccessMode, req.ReadOnly)
	}
	return nil
}
