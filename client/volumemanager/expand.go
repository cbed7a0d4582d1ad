package volumemanager

import (
	"context"
	"fmt"
	"slices"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/structs"
)

// ExpandRequest asks for a volume in use on this node to be expanded
// there (NodeExpandVolume), after the plugin's ControllerExpandVolume
// said the node must.
type ExpandRequest struct {
	VolumeID         string // berth's volume ID
	ExternalVolumeID string // the plugin's
	PluginID         string
	// CapacityMin and CapacityMax are the range ControllerExpandVolume
	// was given: CapacityMin is required, CapacityMax 0 sets no limit.
	CapacityMin  int64
	CapacityMax  int64
	MountOptions *structs.CSIMountOptions
	Secrets      structs.CSISecrets
}

// ExpandResult is what an expansion did.
type ExpandResult struct {
	// InUse is false when the volume is neither staged nor published on
	// this node: nothing was called.
	InUse bool
	// Called is false when the plugin has no node EXPAND_VOLUME
	// capability: there is nothing for the node to do.
	Called bool
	// CapacityBytes is the plugin's answer; 0 when it gave none.
	CapacityBytes int64
	// VolumePath and StagingPath are the paths sent, as the plugin sees
	// them; StagingPath is empty for a volume that is not staged.
	VolumePath  string
	StagingPath string
}

func (r *ExpandRequest) validate() error {
	if r == nil {
		return fmt.Errorf("%w: no expand request", ErrInvalidRequest)
	}
	errs := []error{checkComponent("volume ID", r.VolumeID), CheckPluginID(r.PluginID)}
	if r.ExternalVolumeID == "" {
		errs = append(errs, fmt.Errorf("%w: the external volume ID is required", ErrInvalidRequest))
	}
	if r.CapacityMin <= 0 || (r.CapacityMax != 0 && r.CapacityMax < r.CapacityMin) {
		errs = append(errs, fmt.Errorf("%w: capacity range [%d, %d] is not a positive minimum with a maximum of 0 (none) or no smaller",
			ErrInvalidRequest, r.CapacityMin, r.CapacityMax))
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("volume %q: expand: %w", r.VolumeID, err)
		}
	}
	return nil
}

// ExpandVolume expands a volume staged or published on this node
// (NodeExpandVolume), with the paths the plugin was given when it staged
// and published it: volume_path is where an allocation has it published
// (the first by alloc ID), or, if none has yet, where it is staged;
// staging_target_path is where it is staged, if the plugin stages. The
// capability is the one the volume is in use with. A volume not in use
// here, or here under another external volume, is nothing to do (InUse
// false), as is a plugin without the node EXPAND_VOLUME capability
// (Called false). It waits for the volume's other operations, so it
// never runs during a mount or unmount of it, and writes no usage: an
// expansion changes nothing an unmount needs, and the plugin's answer to
// a repeated one is the same (the call is idempotent).
func (m *Manager) ExpandVolume(ctx context.Context, req *ExpandRequest) (*ExpandResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	key := volumeKey{req.PluginID, req.VolumeID}
	s := m.newStep(req.VolumeID, "", req.PluginID)
	unlock, err := m.locks.Acquire(ctx, key)
	if err != nil {
		return nil, s.fail("wait for the volume's other operations", err)
	}
	defer unlock()

	u := m.get(key)
	if u == nil || u.ExternalVolumeID != req.ExternalVolumeID {
		s.log.Debug("volume not in use on this node: nothing to expand", "external_volume_id", req.ExternalVolumeID)
		return &ExpandResult{}, nil
	}
	allocID, a := expandVia(u)
	res := &ExpandResult{}
	switch {
	case a != nil:
		res.VolumePath = a.PluginTargetPath
	case u.Stage == stageStaged && len(u.Allocs) > 0:
		// Staged for an allocation whose publish has not succeeded:
		// the spec allows an expansion between stage and publish.
		allocID = firstAlloc(u)
		res.VolumePath = u.PluginStagingPath
	default:
		s.log.Debug("volume neither staged nor published on this node yet: nothing to expand")
		return res, nil
	}
	res.InUse = true
	if u.Stage == stageStaged {
		res.StagingPath = u.PluginStagingPath
	}
	s = m.newStep(req.VolumeID, allocID, req.PluginID)
	capability := &structs.CSIVolumeCapability{AccessMode: accessModeOf(u, a), AttachmentMode: u.AttachmentMode}

	p, err := m.nodePlugin(req.PluginID)
	if err != nil {
		return nil, s.fail("find plugin", err)
	}
	cc, err := m.dial(ctx, s, p)
	if err != nil {
		return nil, err
	}
	caps, err := m.nodeCaps(ctx, s, cc)
	if err != nil {
		return nil, err
	}
	if !caps.SupportsExpand {
		s.log.Info("plugin has no node EXPAND_VOLUME capability: nothing to expand on the node")
		return res, nil
	}
	if err := m.call(ctx, s, "NodeExpandVolume", func(ctx context.Context) (err error) {
		res.CapacityBytes, err = cc.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
			ExternalVolumeID: u.ExternalVolumeID,
			VolumePath:       res.VolumePath,
			StagingPath:      res.StagingPath,
			CapacityMin:      req.CapacityMin,
			CapacityMax:      req.CapacityMax,
			Capability:       capability,
			MountOptions:     req.MountOptions,
			Secrets:          req.Secrets,
		})
		return err
	}); err != nil {
		return nil, err
	}
	res.Called = true
	s.log.Info("volume expanded on the node", "volume_path", res.VolumePath, "staging_path", res.StagingPath,
		"capacity_bytes", res.CapacityBytes)
	return res, nil
}

// expandVia is the allocation whose published path an expansion names:
// the first, by ID, that has the volume published; nil if none has.
func expandVia(u *volumeUsage) (string, *allocUsage) {
	ids := make([]string, 0, len(u.Allocs))
	for id, a := range u.Allocs {
		if a.State == publishPublished {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	slices.Sort(ids)
	return ids[0], u.Allocs[ids[0]]
}

// firstAlloc is the first, by ID, of the allocations using the volume;
// "" if none does.
func firstAlloc(u *volumeUsage) string {
	ids := make([]string, 0, len(u.Allocs))
	for id := range u.Allocs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// accessModeOf is the access mode the volume is in use with: a's, else
// that of the first allocation using it.
func accessModeOf(u *volumeUsage, a *allocUsage) structs.CSIVolumeAccessMode {
	if a == nil {
		a = u.Allocs[firstAlloc(u)]
	}
	if a == nil {
		return structs.CSIVolumeAccessModeUnknown
	}
	return a.AccessMode
}
