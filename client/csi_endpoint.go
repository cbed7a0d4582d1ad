package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/internal/keyedsem"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// defaultControllerConcurrency is how many controller calls this client
// makes to one plugin at once: enough that the servers' checks and
// attachments do not queue behind each other (gRPC multiplexes them over
// the plugin's one connection), few enough not to swamp a plugin.
const defaultControllerConcurrency = 16

// clientCSI answers the servers' calls to the CSI plugins this client runs:
// the controller volume, attachment and snapshot operations, and the node
// detach of a volume claimed on this node. Controller calls go over the
// client's one connection to the plugin's controller socket (csi.Pool);
// at most ControllerConcurrency run at once per plugin, and calls about
// one volume or snapshot one at a time, as the CSI spec asks. A node
// detach goes through the client's volume manager, which serializes the
// calls per volume.
type clientCSI struct {
	c       *Client
	sems    keyedsem.Semaphores[string] // controller calls in flight, by plugin ID
	objects keyedsem.Semaphores[string] // one call at a time, by plugin ID and object
}

func newClientCSI(c *Client) *clientCSI {
	return &clientCSI{c: c,
		sems:    keyedsem.Semaphores[string]{Limit: c.config.ControllerConcurrency},
		objects: keyedsem.Semaphores[string]{Limit: 1}}
}

// ControllerCreateVolume creates a volume with the plugin's controller.
func (e *clientCSI) ControllerCreateVolume(ctx context.Context, args *structs.ClientCSIControllerCreateVolumeRequest, reply *structs.ClientCSIControllerCreateVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.Name), volumeNamed(args.Name), func(ctx context.Context, cc *csi.Client) error {
		resp, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{
			Name:                args.Name,
			CapacityMin:         args.CapacityMin,
			CapacityMax:         args.CapacityMax,
			Capabilities:        args.Capabilities,
			MountOptions:        args.MountOptions,
			Secrets:             args.Secrets,
			Parameters:          args.Parameters,
			SnapshotID:          args.SnapshotID,
			CloneID:             args.CloneID,
			RequiredTopologies:  args.RequiredTopologies,
			PreferredTopologies: args.PreferredTopologies,
		})
		if err != nil {
			return err
		}
		reply.ExternalVolumeID = resp.ExternalVolumeID
		reply.CapacityBytes = resp.CapacityBytes
		reply.VolumeContext = resp.VolumeContext
		reply.Topologies = resp.Topologies
		return nil
	})
}

// ControllerDeleteVolume deletes a volume with the plugin's controller;
// one already gone is deleted.
func (e *clientCSI) ControllerDeleteVolume(ctx context.Context, args *structs.ClientCSIControllerDeleteVolumeRequest, _ *structs.ClientCSIControllerDeleteVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.ExternalVolumeID), volumeNamed(args.ExternalVolumeID), func(ctx context.Context, cc *csi.Client) error {
		return cc.DeleteVolume(ctx, args.ExternalVolumeID, args.Secrets)
	})
}

// ControllerValidateVolume asks the plugin's controller whether a volume
// supports its capabilities. Unconfirmed is Confirmed false, with the
// plugin's message, and no error; a confirmed set that differs from the
// request is BadRequest.
func (e *clientCSI) ControllerValidateVolume(ctx context.Context, args *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.ExternalVolumeID), volumeNamed(args.ExternalVolumeID), func(ctx context.Context, cc *csi.Client) error {
		resp, err := cc.ValidateVolumeCapabilities(ctx, &csi.ValidateRequest{
			ExternalVolumeID: args.ExternalVolumeID,
			Capabilities:     args.Capabilities,
			MountOptions:     args.MountOptions,
			Secrets:          args.Secrets,
			Parameters:       args.Parameters,
			Context:          args.Context,
		})
		if err != nil {
			return err
		}
		reply.Confirmed, reply.Message = resp.Confirmed, resp.Message
		return nil
	})
}

// ControllerExpandVolume grows a volume with the plugin's controller. The
// reply says whether the nodes that have it staged must expand it too.
func (e *clientCSI) ControllerExpandVolume(ctx context.Context, args *structs.ClientCSIControllerExpandVolumeRequest, reply *structs.ClientCSIControllerExpandVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.ExternalVolumeID), volumeNamed(args.ExternalVolumeID), func(ctx context.Context, cc *csi.Client) error {
		resp, err := cc.ControllerExpandVolume(ctx, &csi.ExpandVolumeRequest{
			ExternalVolumeID: args.ExternalVolumeID,
			CapacityMin:      args.CapacityMin,
			CapacityMax:      args.CapacityMax,
			Capability:       args.Capability,
			MountOptions:     args.MountOptions,
			Secrets:          args.Secrets,
		})
		if err != nil {
			return err
		}
		reply.CapacityBytes = resp.CapacityBytes
		reply.NodeExpansionRequired = resp.NodeExpansionRequired
		return nil
	})
}

// ControllerCreateSnapshot snapshots a volume with the plugin's
// controller; the same name returns the same snapshot. The reply's
// snapshot has the plugin's fields, the plugin ID and the name; berth's
// source volume ID is the server's to fill in.
func (e *clientCSI) ControllerCreateSnapshot(ctx context.Context, args *structs.ClientCSIControllerCreateSnapshotRequest, reply *structs.ClientCSIControllerCreateSnapshotResponse) error {
	what := fmt.Sprintf("%s of %s", snapshotNamed(args.Name), volumeNamed(args.ExternalSourceVolumeID))
	return e.controller(ctx, args.PluginID, args.NodeID, snapshotNamed(args.Name), what, func(ctx context.Context, cc *csi.Client) error {
		sn, err := cc.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{
			SourceVolumeID: args.ExternalSourceVolumeID,
			Name:           args.Name,
			Secrets:        args.Secrets,
			Parameters:     args.Parameters,
		})
		if err != nil {
			return err
		}
		reply.Snapshot = toSnapshot(args.PluginID, sn)
		reply.Snapshot.Name = args.Name
		return nil
	})
}

// ControllerDeleteSnapshot deletes a snapshot with the plugin's
// controller; one already gone is deleted.
func (e *clientCSI) ControllerDeleteSnapshot(ctx context.Context, args *structs.ClientCSIControllerDeleteSnapshotRequest, _ *structs.ClientCSIControllerDeleteSnapshotResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, snapshotNamed(args.SnapshotID), snapshotNamed(args.SnapshotID), func(ctx context.Context, cc *csi.Client) error {
		return cc.DeleteSnapshot(ctx, args.SnapshotID, args.Secrets)
	})
}

// ControllerListSnapshots reads one page of the plugin controller's
// snapshots.
func (e *clientCSI) ControllerListSnapshots(ctx context.Context, args *structs.ClientCSIControllerListSnapshotsRequest, reply *structs.ClientCSIControllerListSnapshotsResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, "", "snapshot list", func(ctx context.Context, cc *csi.Client) error {
		resp, err := cc.ListSnapshots(ctx, &csi.ListSnapshotsRequest{
			SnapshotID:    args.SnapshotID,
			MaxEntries:    args.MaxEntries,
			StartingToken: args.StartingToken,
			Secrets:       args.Secrets,
		})
		if err != nil {
			return err
		}
		reply.Snapshots = make([]*structs.CSISnapshot, 0, len(resp.Snapshots))
		for _, sn := range resp.Snapshots {
			reply.Snapshots = append(reply.Snapshots, toSnapshot(args.PluginID, sn))
		}
		reply.NextToken = resp.NextToken
		return nil
	})
}

// ControllerListVolumes reads one page of the plugin controller's volumes.
func (e *clientCSI) ControllerListVolumes(ctx context.Context, args *structs.ClientCSIControllerListVolumesRequest, reply *structs.ClientCSIControllerListVolumesResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, "", "volume list", func(ctx context.Context, cc *csi.Client) error {
		resp, err := cc.ListVolumes(ctx, args.MaxEntries, args.StartingToken)
		if err != nil {
			return err
		}
		reply.Volumes, reply.NextToken = resp.Volumes, resp.NextToken
		return conditions(ctx, cc, reply.Volumes)
	})
}

// conditions fills the listed volumes' condition from the controller's
// ControllerGetVolumeHealth, where it offers GET_VOLUME_HEALTH (CSI 1.13
// took the condition out of ListVolumes): one call per volume of the
// page, one at a time. A volume whose call fails says so in its Status.
func conditions(ctx context.Context, cc *csi.Client, vols []*structs.CSIExternalVolume) error {
	if len(vols) == 0 {
		return nil
	}
	caps, err := cc.ControllerGetCapabilities(ctx)
	if err != nil {
		return err
	}
	if !caps.SupportsCondition {
		return nil
	}
	for _, v := range vols {
		cond, err := cc.ControllerGetVolumeHealth(ctx, v.ExternalID)
		if err != nil {
			v.Status = structs.Truncate("condition unknown: "+err.Error(), structs.MaxUsageMessage)
			continue
		}
		v.IsAbnormal, v.Status = cond.Abnormal, cond.Message
		if !cond.Abnormal {
			v.Status = "normal" // reported, and nothing wrong
		}
	}
	return nil
}

// ControllerAttachVolume publishes a volume to a node with the plugin's
// controller (ControllerPublishVolume) and returns the publish context
// the node's stage and publish calls need.
func (e *clientCSI) ControllerAttachVolume(ctx context.Context, args *structs.ClientCSIControllerAttachVolumeRequest, reply *structs.ClientCSIControllerAttachVolumeResponse) error {
	what := fmt.Sprintf("attach of %s to plugin node %q", volumeNamed(args.ExternalVolumeID), args.ExternalNodeID)
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.ExternalVolumeID), what, func(ctx context.Context, cc *csi.Client) error {
		pc, err := cc.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
			ExternalVolumeID: args.ExternalVolumeID,
			ExternalNodeID:   args.ExternalNodeID,
			Capability:       args.Capability,
			MountOptions:     args.MountOptions,
			ReadOnly:         args.ReadOnly,
			Secrets:          args.Secrets,
			VolumeContext:    args.VolumeContext,
		})
		if err != nil {
			return err
		}
		reply.PublishContext = pc
		return nil
	})
}

// ControllerDetachVolume unpublishes a volume from a node with the
// plugin's controller (ControllerUnpublishVolume); a volume not published
// there, or one the plugin does not know, is detached.
func (e *clientCSI) ControllerDetachVolume(ctx context.Context, args *structs.ClientCSIControllerDetachVolumeRequest, _ *structs.ClientCSIControllerDetachVolumeResponse) error {
	what := fmt.Sprintf("detach of %s from plugin node %q", volumeNamed(args.ExternalVolumeID), args.ExternalNodeID)
	return e.controller(ctx, args.PluginID, args.NodeID, volumeNamed(args.ExternalVolumeID), what, func(ctx context.Context, cc *csi.Client) error {
		return cc.ControllerUnpublishVolume(ctx, args.ExternalVolumeID, args.ExternalNodeID, args.Secrets)
	})
}

// NodeDetachVolume unpublishes a volume claimed on this node for an
// allocation and, when no other allocation here uses it, unstages it. A
// volume this node no longer has for the allocation is detached. The
// request must name this node.
func (e *clientCSI) NodeDetachVolume(ctx context.Context, args *structs.ClientCSINodeDetachVolumeRequest, _ *structs.ClientCSINodeDetachVolumeResponse) error {
	node := e.c.nodeID
	what := fmt.Sprintf("%s for alloc %s", volumeNamed(args.VolumeID), args.AllocID)
	switch {
	case args.NodeID == "":
		return structs.NewError(structs.CodeBadRequest, "%s: the claiming node's ID is required (this is node %s)", what, node)
	case args.NodeID != node:
		return structs.NewError(structs.CodeBadRequest, "%s: a detach from node %s reached node %s", what, args.NodeID, node)
	}
	err := e.c.volumes.UnmountVolume(ctx, args.AllocID, args.VolumeID, args.PluginID, args.ExternalVolumeID)
	if err != nil {
		e.c.logger.Debug("node detach failed", "plugin_id", args.PluginID, "volume_id", args.VolumeID, "alloc_id", args.AllocID, "error", err)
		return nodeError(err, node)
	}
	return nil
}

// toSnapshot is berth's view of a snapshot of plugin pluginID.
func toSnapshot(pluginID string, sn *csi.Snapshot) *structs.CSISnapshot {
	return &structs.CSISnapshot{
		ID:                     sn.ID,
		PluginID:               pluginID,
		ExternalSourceVolumeID: sn.SourceVolumeID,
		SizeBytes:              sn.SizeBytes,
		CreateTime:             sn.CreateTime,
		IsReady:                sn.ReadyToUse,
	}
}

// controller runs fn against the controller of plugin pluginID on this
// node, in its turn, and codes its error for the server that asked. what
// names the object of the call in errors and logs (volumeNamed,
// snapshotNamed, or a listing).
func (e *clientCSI) controller(ctx context.Context, pluginID, nodeID, object, what string, fn func(context.Context, *csi.Client) error) error {
	node := e.c.nodeID
	if pluginID == "" {
		return structs.NewError(structs.CodeBadRequest, "%s: a plugin ID is required", what)
	}
	if nodeID != "" && nodeID != node {
		return structs.NewError(structs.CodeBadRequest, "%s: a call for node %s reached node %s", what, nodeID, node)
	}
	p, ok := e.c.registry.Controller(pluginID)
	if !ok && e.c.registry.Has(pluginID) {
		return structs.NewError(structs.CodeBadRequest, "%s: plugin %q runs only a node instance on node %s, not a controller",
			what, pluginID, node)
	}
	if !ok {
		// The servers call only a controller their state says is healthy
		// here: this one has just stopped or is restarting. Unavailable,
		// so that they try another controller, and a caller retries.
		return structs.NewError(structs.CodeUnavailable, "%s: plugin %q is not running on node %s (it may be restarting); retry",
			what, pluginID, node)
	}
	if !p.ProvidesController() {
		return structs.NewError(structs.CodeBadRequest, "%s: plugin %q runs only a node instance on node %s, not a controller",
			what, pluginID, node)
	}
	socket := p.ControllerSocket
	if socket == "" {
		socket = p.Socket
	}

	// The CSI spec wants at most one call in flight per volume (or
	// snapshot): calls about one object (attach and detach of a volume
	// alike) wait for each other, before they take a turn at the plugin.
	if object != "" {
		unlock, err := e.objects.Acquire(ctx, pluginID+"\x00"+object)
		if err != nil {
			return structs.NewError(structs.CodeUnavailable, "%s: waiting for another call about %s to plugin %q on node %s: %v",
				what, object, pluginID, node, err)
		}
		defer unlock()
	}

	release, err := e.sems.Acquire(ctx, pluginID)
	if err != nil {
		return structs.NewError(structs.CodeUnavailable, "%s: waiting for plugin %q on node %s: %v", what, pluginID, node, err)
	}
	defer release()

	cc, err := e.c.csiConns.Get(ctx, pluginID, socket)
	if err == nil {
		err = fn(ctx, cc)
	}
	if err != nil {
		e.c.logger.Debug("controller call failed", "plugin_id", pluginID, "target", what, "error", err)
		return controllerError(err, node, what)
	}
	return nil
}

// csiErrorCodes codes the final CSI errors; a final code not listed is
// Internal, and every error that is not final is Unavailable, so that the
// server retries it (the operation may still be in progress).
var csiErrorCodes = map[csi.Code]structs.ErrorCode{
	csi.CodeInvalidArgument:    structs.CodeBadRequest,
	csi.CodeOutOfRange:         structs.CodeBadRequest,
	csi.CodeUnimplemented:      structs.CodeBadRequest, // the plugin does not offer the call
	csi.CodeNotFound:           structs.CodeNotFound,
	csi.CodeAlreadyExists:      structs.CodeConflict,
	csi.CodeFailedPrecondition: structs.CodeConflict,
	csi.CodePermissionDenied:   structs.CodePermissionDenied,
	csi.CodeUnauthenticated:    structs.CodePermissionDenied, // the secrets were refused
}

// controllerError codes a failed controller call. The message names what
// the call was about (a volume, a snapshot) and the node, then the
// plugin, the CSI call and what the plugin said (csi.Error).
func controllerError(err error, node, what string) error {
	return structs.NewError(csiErrorCode(err), "%s on node %s: %v", what, node, err)
}

// nodeError codes a failed node detach. The volume manager's error names
// the volume, the alloc, the step and the plugin; a plugin that is not
// running (yet) is Unavailable, so that the server retries, as is any
// failure that is not a final CSI error (a local one included: the volume
// may still be mounted).
func nodeError(err error, node string) error {
	code := csiErrorCode(err)
	switch {
	case errors.Is(err, volumemanager.ErrInvalidRequest):
		code = structs.CodeBadRequest
	case errors.Is(err, volumemanager.ErrConflict):
		code = structs.CodeConflict
	case errors.Is(err, volumemanager.ErrPluginNotRunning):
		code = structs.CodeUnavailable
	}
	return structs.NewError(code, "node %s: %v", node, err)
}

// csiErrorCode is the code of a failed CSI call.
func csiErrorCode(err error) structs.ErrorCode {
	code := structs.CodeInternal
	switch {
	case !csi.IsFinal(err):
		code = structs.CodeUnavailable
	case errors.Is(err, csi.ErrInvalidRequest), errors.Is(err, csi.ErrCapabilityMismatch):
		code = structs.CodeBadRequest
	case errors.Is(err, csi.ErrClosed):
		code = structs.CodeUnavailable
	default:
		if c, ok := csiErrorCodes[csi.CodeOf(err)]; ok {
			code = c
		}
	}
	return code
}

// volumeNamed and snapshotNamed name the object of a controller call in
// its errors: `volume "vol-1"`.
func volumeNamed(id string) string   { return fmt.Sprintf("volume %q", id) }
func snapshotNamed(id string) string { return fmt.Sprintf("snapshot %q", id) }
