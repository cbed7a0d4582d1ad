package csi

import (
	"context"
	"fmt"
	"maps"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// ControllerPublishVolumeRequest is what ControllerPublishVolume sends.
// ExternalNodeID is the plugin's ID of the node to publish to (its
// NodeGetInfo answer on that node), not berth's.
type ControllerPublishVolumeRequest struct {
	ExternalVolumeID string
	ExternalNodeID   string
	Capability       *structs.CSIVolumeCapability
	MountOptions     *structs.CSIMountOptions // for a file-system capability
	ReadOnly         bool
	Secrets          structs.CSISecrets
	VolumeContext    map[string]string
}

// ControllerPublishVolume asks the controller to make a volume available
// on a node (attach it) and returns the publish context the node calls
// need (nil if the plugin gave none). A request berth can tell is invalid
// (no volume ID, no node ID, no or an unknown capability) fails with
// ErrInvalidRequest before any call.
func (c *Client) ControllerPublishVolume(ctx context.Context, req *ControllerPublishVolumeRequest) (map[string]string, error) {
	const call = "ControllerPublishVolume"
	if req == nil || req.ExternalVolumeID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if req.ExternalNodeID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: volume %q: the plugin's node ID is required", ErrInvalidRequest, req.ExternalVolumeID))
	}
	vc, err := volumeCapability(req.Capability, req.MountOptions)
	if err != nil {
		return nil, wrapError(c.plugin, call, err)
	}
	var publishContext map[string]string
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{
			VolumeId:         req.ExternalVolumeID,
			NodeId:           req.ExternalNodeID,
			VolumeCapability: vc,
			Readonly:         req.ReadOnly,
			Secrets:          req.Secrets,
			VolumeContext:    req.VolumeContext,
		})
		if err != nil {
			return err
		}
		publishContext = maps.Clone(resp.GetPublishContext())
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.logger.Debug("volume controller-published", "external_id", req.ExternalVolumeID, "external_node_id", req.ExternalNodeID, "readonly", req.ReadOnly)
	return publishContext, nil
}

// ControllerUnpublishVolume asks the controller to make a volume
// unavailable on a node (detach it). A volume not published there, or a
// volume or node the plugin does not know (NOT_FOUND), is unpublished:
// success. The node ID is required: berth never asks to unpublish a
// volume from every node at once, which is what the spec makes of an
// empty one.
func (c *Client) ControllerUnpublishVolume(ctx context.Context, externalID, externalNodeID string, secrets structs.CSISecrets) error {
	const call = "ControllerUnpublishVolume"
	if externalID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if externalNodeID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: volume %q: the plugin's node ID is required", ErrInvalidRequest, externalID))
	}
	err := c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.controller.ControllerUnpublishVolume(ctx, &csipb.ControllerUnpublishVolumeRequest{
			VolumeId: externalID,
			NodeId:   externalNodeID,
			Secrets:  secrets,
		})
		return err
	})
	if CodeOf(err) == CodeNotFound {
		c.logger.Debug("volume or node already gone", "external_id", externalID, "external_node_id", externalNodeID)
		return nil
	}
	if err != nil {
		return err
	}
	c.logger.Debug("volume controller-unpublished", "external_id", externalID, "external_node_id", externalNodeID)
	return nil
}
