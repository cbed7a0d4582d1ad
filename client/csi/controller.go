package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// ControllerGetCapabilities returns the controller service's
// capabilities. Values the spec (v1.13.0) does not define, UNKNOWN and the
// removed VOLUME_CONDITION (11) among them, are ignored; volume condition
// support is GET_VOLUME_HEALTH, its v1.13 successor.
func (c *Client) ControllerGetCapabilities(ctx context.Context) (*structs.CSIControllerInfo, error) {
	info := &structs.CSIControllerInfo{}
	err := c.call(ctx, "ControllerGetCapabilities", func(ctx context.Context) error {
		resp, err := c.controller.ControllerGetCapabilities(ctx, &csipb.ControllerGetCapabilitiesRequest{})
		if err != nil {
			return err
		}
		for _, cc := range resp.GetCapabilities() {
			switch cc.GetRpc().GetType() {
			case csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME:
				info.SupportsCreateDelete = true
			case csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME:
				info.SupportsAttachDetach = true
			case csipb.ControllerServiceCapability_RPC_LIST_VOLUMES:
				info.SupportsListVolumes = true
			case csipb.ControllerServiceCapability_RPC_GET_CAPACITY:
				info.SupportsGetCapacity = true
			case csipb.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT:
				info.SupportsCreateDeleteSnapshot = true
			case csipb.ControllerServiceCapability_RPC_LIST_SNAPSHOTS:
				info.SupportsListSnapshots = true
			case csipb.ControllerServiceCapability_RPC_CLONE_VOLUME:
				info.SupportsClone = true
			case csipb.ControllerServiceCapability_RPC_PUBLISH_READONLY:
				info.SupportsReadOnlyAttach = true
			case csipb.ControllerServiceCapability_RPC_EXPAND_VOLUME:
				info.SupportsExpand = true
			case csipb.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES:
				info.SupportsListVolumesAttachedNodes = true
			case csipb.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH:
				info.SupportsCondition = true
			case csipb.ControllerServiceCapability_RPC_GET_VOLUME:
				info.SupportsGet = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}
