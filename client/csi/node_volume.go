package csi

import (
	"context"
	"fmt"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// NodeStageVolumeRequest is what NodeStageVolume sends. StagingPath is
// the path as the plugin sees it; the CO creates the directory first.
type NodeStageVolumeRequest struct {
	ExternalVolumeID string
	StagingPath      string
	Capability       *structs.CSIVolumeCapability
	MountOptions     *structs.CSIMountOptions // for a file-system capability
	Secrets          structs.CSISecrets
	VolumeContext    map[string]string // what CreateVolume returned, or the volume's registered context
	PublishContext   map[string]string // what ControllerPublishVolume returned
	// VolumeMountGroup is the group (a GID) the plugin gives the mounted
	// volume to, for a plugin with VOLUME_MOUNT_GROUP; "" for none.
	VolumeMountGroup string
}

// NodePublishVolumeRequest is what NodePublishVolume sends. TargetPath is
// the path as the plugin sees it: the CO creates its parent, the plugin
// creates (and on unpublish removes) the target itself. StagingPath is
// empty when the plugin does not stage volumes.
type NodePublishVolumeRequest struct {
	ExternalVolumeID string
	StagingPath      string
	TargetPath       string
	Capability       *structs.CSIVolumeCapability
	MountOptions     *structs.CSIMountOptions
	ReadOnly         bool
	Secrets          structs.CSISecrets
	VolumeContext    map[string]string
	PublishContext   map[string]string
	VolumeMountGroup string // as NodeStageVolumeRequest's
}

// NodeStageVolume asks the node to stage a volume at StagingPath, once per
// node, before any NodePublishVolume (plugins with STAGE_UNSTAGE_VOLUME).
// A request berth can tell is invalid (no volume ID, a staging path that
// is not absolute, no or an unknown capability) fails with
// ErrInvalidRequest before any call.
func (c *Client) NodeStageVolume(ctx context.Context, req *NodeStageVolumeRequest) error {
	const call = "NodeStageVolume"
	if req == nil || req.ExternalVolumeID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if err := checkPath(req.ExternalVolumeID, "staging path", req.StagingPath); err != nil {
		return wrapError(c.plugin, call, err)
	}
	vc, err := volumeCapability(req.Capability, req.MountOptions)
	if err != nil {
		return wrapError(c.plugin, call, err)
	}
	if m := vc.GetMount(); m != nil {
		m.VolumeMountGroup = req.VolumeMountGroup
	}
	err = c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
			VolumeId:          req.ExternalVolumeID,
			PublishContext:    req.PublishContext,
			StagingTargetPath: req.StagingPath,
			VolumeCapability:  vc,
			Secrets:           req.Secrets,
			VolumeContext:     req.VolumeContext,
		})
		return err
	})
	if err != nil {
		return err
	}
	c.logger.Debug("volume staged", "external_id", req.ExternalVolumeID, "staging_path", req.StagingPath)
	return nil
}

// NodeUnstageVolume asks the node to unstage a volume from stagingPath. A
// volume not staged there, or gone (NOT_FOUND), is unstaged: success.
func (c *Client) NodeUnstageVolume(ctx context.Context, externalID, stagingPath string) error {
	const call = "NodeUnstageVolume"
	if externalID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if err := checkPath(externalID, "staging path", stagingPath); err != nil {
		return wrapError(c.plugin, call, err)
	}
	err := c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: externalID, StagingTargetPath: stagingPath})
		return err
	})
	if CodeOf(err) == CodeNotFound {
		c.logger.Debug("volume already gone", "external_id", externalID, "staging_path", stagingPath)
		return nil
	}
	if err != nil {
		return err
	}
	c.logger.Debug("volume unstaged", "external_id", externalID, "staging_path", stagingPath)
	return nil
}

// NodePublishVolume asks the node to publish a volume at TargetPath. A
// request berth can tell is invalid (no volume ID, a target or staging
// path that is not absolute, target and staging path the same, no or an
// unknown capability) fails with ErrInvalidRequest before any call.
func (c *Client) NodePublishVolume(ctx context.Context, req *NodePublishVolumeRequest) error {
	const call = "NodePublishVolume"
	if req == nil || req.ExternalVolumeID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if err := checkPath(req.ExternalVolumeID, "target path", req.TargetPath); err != nil {
		return wrapError(c.plugin, call, err)
	}
	if req.StagingPath != "" {
		if err := checkPath(req.ExternalVolumeID, "staging path", req.StagingPath); err != nil {
			return wrapError(c.plugin, call, err)
		}
		if filepath.Clean(req.StagingPath) == filepath.Clean(req.TargetPath) {
			return wrapError(c.plugin, call, fmt.Errorf("%w: volume %q: the target path is the staging path %q",
				ErrInvalidRequest, req.ExternalVolumeID, req.TargetPath))
		}
	}
	vc, err := volumeCapability(req.Capability, req.MountOptions)
	if err != nil {
		return wrapError(c.plugin, call, err)
	}
	if m := vc.GetMount(); m != nil {
		m.VolumeMountGroup = req.VolumeMountGroup
	}
	err = c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
			VolumeId:          req.ExternalVolumeID,
			PublishContext:    req.PublishContext,
			StagingTargetPath: req.StagingPath,
			TargetPath:        req.TargetPath,
			VolumeCapability:  vc,
			Readonly:          req.ReadOnly,
			Secrets:           req.Secrets,
			VolumeContext:     req.VolumeContext,
		})
		return err
	})
	if err != nil {
		return err
	}
	c.logger.Debug("volume published", "external_id", req.ExternalVolumeID, "target_path", req.TargetPath, "readonly", req.ReadOnly)
	return nil
}

// NodeUnpublishVolume asks the node to unpublish a volume from targetPath
// (the plugin removes the target). A volume not published there, or gone
// (NOT_FOUND), is unpublished: success.
func (c *Client) NodeUnpublishVolume(ctx context.Context, externalID, targetPath string) error {
	const call = "NodeUnpublishVolume"
	if externalID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if err := checkPath(externalID, "target path", targetPath); err != nil {
		return wrapError(c.plugin, call, err)
	}
	err := c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: externalID, TargetPath: targetPath})
		return err
	})
	if CodeOf(err) == CodeNotFound {
		c.logger.Debug("volume already gone", "external_id", externalID, "target_path", targetPath)
		return nil
	}
	if err != nil {
		return err
	}
	c.logger.Debug("volume unpublished", "external_id", externalID, "target_path", targetPath)
	return nil
}

// checkPath refuses a path the spec requires and berth did not give: a
// missing or relative one (the plugin runs in another working directory,
// often another mount namespace).
func checkPath(volumeID, field, p string) error {
	if p == "" || !filepath.IsAbs(p) {
		return fmt.Errorf("%w: volume %q: the %s %q must be an absolute path", ErrInvalidRequest, volumeID, field, p)
	}
	return nil
}
