package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// NodeGetInfo returns the plugin's ID for this node, its volume limit (0:
// none reported) and the node's accessible topology.
func (c *Client) NodeGetInfo(ctx context.Context) (*structs.CSINodeInfo, error) {
	info := &structs.CSINodeInfo{}
	err := c.call(ctx, "NodeGetInfo", func(ctx context.Context) error {
		resp, err := c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
		if err != nil {
			return err
		}
		info.ID = resp.GetNodeId()
		info.MaxVolumes = resp.GetMaxVolumesPerNode()
		if segs := resp.GetAccessibleTopology().GetSegments(); len(segs) > 0 {
			info.AccessibleTopology = &structs.CSITopology{Segments: make(map[string]string, len(segs))}
			for k, v := range segs {
				info.AccessibleTopology.Segments[k] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// NodeCapabilities is what NodeGetCapabilities advertised.
type NodeCapabilities struct {
	RequiresNodeStageVolume bool // STAGE_UNSTAGE_VOLUME
	SupportsStats           bool // GET_VOLUME_STATS
	SupportsExpand          bool // EXPAND_VOLUME
	SupportsCondition       bool // GET_VOLUME_HEALTH
	SupportsMountGroup      bool // VOLUME_MOUNT_GROUP
}

// NodeGetCapabilities returns the node service's capabilities. Values the
// spec (v1.13.0) does not define, UNKNOWN and the removed VOLUME_CONDITION
// (4) among them, are ignored; volume condition support is GET_VOLUME_HEALTH,
// its v1.13 successor.
func (c *Client) NodeGetCapabilities(ctx context.Context) (*NodeCapabilities, error) {
	caps := &NodeCapabilities{}
	err := c.call(ctx, "NodeGetCapabilities", func(ctx context.Context) error {
		resp, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
		if err != nil {
			return err
		}
		for _, nc := range resp.GetCapabilities() {
			switch nc.GetRpc().GetType() {
			case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
				caps.RequiresNodeStageVolume = true
			case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
				caps.SupportsStats = true
			case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
				caps.SupportsExpand = true
			case csipb.NodeServiceCapability_RPC_GET_VOLUME_HEALTH:
				caps.SupportsCondition = true
			case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
				caps.SupportsMountGroup = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return caps, nil
}

// Apply sets the capability fields of info.
func (nc *NodeCapabilities) Apply(info *structs.CSINodeInfo) {
	info.RequiresNodeStageVolume = nc.RequiresNodeStageVolume
	info.SupportsStats = nc.SupportsStats
	info.SupportsExpand = nc.SupportsExpand
	info.SupportsCondition = nc.SupportsCondition
}
