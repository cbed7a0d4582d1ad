package server

import (
	"context"

	"github.com/berth-csi/berth/structs"
)

// ClientCSI relays controller calls to the client that runs the plugin
// instance named by NodeID, over the session that client opened (or
// through the server that holds it). Only servers call it (relay checks:
// a server's certificate, or a management token such as a leader's).
type ClientCSI struct{ srv *Server }

// ControllerCreateVolume relays a create to a controller instance.
func (c *ClientCSI) ControllerCreateVolume(ctx context.Context, args *structs.ClientCSIControllerCreateVolumeRequest, reply *structs.ClientCSIControllerCreateVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerCreateVolume", args, args, reply)
}

// ControllerDeleteVolume relays a delete to a controller instance.
func (c *ClientCSI) ControllerDeleteVolume(ctx context.Context, args *structs.ClientCSIControllerDeleteVolumeRequest, reply *structs.ClientCSIControllerDeleteVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerDeleteVolume", args, args, reply)
}

// ControllerValidateVolume relays a capability check to a controller instance.
func (c *ClientCSI) ControllerValidateVolume(ctx context.Context, args *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerValidateVolume", args, args, reply)
}

// ControllerExpandVolume relays an expand to a controller instance.
func (c *ClientCSI) ControllerExpandVolume(ctx context.Context, args *structs.ClientCSIControllerExpandVolumeRequest, reply *structs.ClientCSIControllerExpandVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerExpandVolume", args, args, reply)
}

// ControllerCreateSnapshot relays a snapshot create to a controller instance.
func (c *ClientCSI) ControllerCreateSnapshot(ctx context.Context, args *structs.ClientCSIControllerCreateSnapshotRequest, reply *structs.ClientCSIControllerCreateSnapshotResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerCreateSnapshot", args, args, reply)
}

// ControllerDeleteSnapshot relays a snapshot delete to a controller instance.
func (c *ClientCSI) ControllerDeleteSnapshot(ctx context.Context, args *structs.ClientCSIControllerDeleteSnapshotRequest, reply *structs.ClientCSIControllerDeleteSnapshotResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerDeleteSnapshot", args, args, reply)
}

// ControllerListSnapshots relays a snapshot list to a controller instance.
func (c *ClientCSI) ControllerListSnapshots(ctx context.Context, args *structs.ClientCSIControllerListSnapshotsRequest, reply *structs.ClientCSIControllerListSnapshotsResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerListSnapshots", args, args, reply)
}

// ControllerListVolumes relays a volume list to a controller instance.
func (c *ClientCSI) ControllerListVolumes(ctx context.Context, args *structs.ClientCSIControllerListVolumesRequest, reply *structs.ClientCSIControllerListVolumesResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerListVolumes", args, args, reply)
}

// ControllerAttachVolume relays a controller publish to a controller instance.
func (c *ClientCSI) ControllerAttachVolume(ctx context.Context, args *structs.ClientCSIControllerAttachVolumeRequest, reply *structs.ClientCSIControllerAttachVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerAttachVolume", args, args, reply)
}

// ControllerDetachVolume relays a controller unpublish to a controller instance.
func (c *ClientCSI) ControllerDetachVolume(ctx context.Context, args *structs.ClientCSIControllerDetachVolumeRequest, reply *structs.ClientCSIControllerDetachVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.ControllerDetachVolume", args, args, reply)
}

// NodeDetachVolume relays a node unpublish and unstage to the claiming client.
func (c *ClientCSI) NodeDetachVolume(ctx context.Context, args *structs.ClientCSINodeDetachVolumeRequest, reply *structs.ClientCSINodeDetachVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.NodeDetachVolume", args, args, reply)
}

// NodeExpandVolume relays a node expansion to a client that has the volume in use.
func (c *ClientCSI) NodeExpandVolume(ctx context.Context, args *structs.ClientCSINodeExpandVolumeRequest, reply *structs.ClientCSINodeExpandVolumeResponse) error {
	return c.relay(ctx, args.NodeID, "ClientCSI.NodeExpandVolume", args, args, reply)
}

func (c *ClientCSI) relay(ctx context.Context, nodeID, method string, info rpcInfo, args, reply any) error {
	if nodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "%s: missing node ID", method)
	}
	ctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	return c.srv.callClient(ctx, nodeID, method, method, info, args, reply)
}
