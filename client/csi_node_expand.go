package client

import (
	"context"

	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// NodeExpandVolume expands a volume staged or published on this node
// (NodeExpandVolume), with the paths and capability the volume manager
// recorded when it staged and published it (paths as the plugin sees
// them: under its mount_dir for a plugin task). A volume not in use here
// answers InUse false, and nothing is called. The request must name this
// node. Errors are coded as a node detach's: a final CSI error with its
// code, a plugin not running (yet), or any error that is not final,
// Unavailable, for the server to retry.
func (e *clientCSI) NodeExpandVolume(ctx context.Context, args *structs.ClientCSINodeExpandVolumeRequest, reply *structs.ClientCSINodeExpandVolumeResponse) error {
	node := e.c.nodeID
	what := volumeNamed(args.VolumeID)
	switch {
	case args.NodeID == "":
		return structs.NewError(structs.CodeBadRequest, "%s: node expand: the node's ID is required (this is node %s)", what, node)
	case args.NodeID != node:
		return structs.NewError(structs.CodeBadRequest, "%s: a node expand for node %s reached node %s", what, args.NodeID, node)
	}
	res, err := e.c.volumes.ExpandVolume(ctx, &volumemanager.ExpandRequest{
		VolumeID:         args.VolumeID,
		ExternalVolumeID: args.ExternalVolumeID,
		PluginID:         args.PluginID,
		CapacityMin:      args.CapacityMin,
		CapacityMax:      args.CapacityMax,
		MountOptions:     args.MountOptions,
		Secrets:          args.Secrets,
	})
	if err != nil {
		e.c.logger.Debug("node expand failed", "plugin_id", args.PluginID, "volume_id", args.VolumeID, "error", err)
		return nodeError(err, node)
	}
	reply.InUse, reply.CapacityBytes = res.InUse, res.CapacityBytes
	return nil
}
