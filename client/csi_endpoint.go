package client

import (
	"context"
	"errors"
	"sync"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/structs"
)

// defaultControllerConcurrency is how many controller calls this client
// makes to one plugin at once.
const defaultControllerConcurrency = 1

// clientCSI answers the servers' calls to the CSI plugins this client runs:
// the controller volume operations. Each call dials the plugin's
// controller socket, makes one CSI call and closes the connection; calls
// to one plugin wait their turn (at most limit at once).
type clientCSI struct {
	c     *Client
	limit int // controller calls in flight per plugin; defaultControllerConcurrency if not positive

	mu   sync.Mutex
	sems map[string]*pluginSem // by plugin ID, only while a call holds or waits for it
}

// pluginSem bounds the controller calls to one plugin; users counts the
// calls holding or waiting for it, so that it is dropped with the last.
type pluginSem struct {
	slots chan struct{}
	users int
}

func newClientCSI(c *Client) *clientCSI {
	return &clientCSI{c: c, limit: defaultControllerConcurrency}
}

// ControllerCreateVolume creates a volume with the plugin's controller.
func (e *clientCSI) ControllerCreateVolume(ctx context.Context, args *structs.ClientCSIControllerCreateVolumeRequest, reply *structs.ClientCSIControllerCreateVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, args.Name, func(ctx context.Context, cc *csi.Client) error {
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
	return e.controller(ctx, args.PluginID, args.NodeID, args.ExternalVolumeID, func(ctx context.Context, cc *csi.Client) error {
		return cc.DeleteVolume(ctx, args.ExternalVolumeID, args.Secrets)
	})
}

// ControllerValidateVolume asks the plugin's controller whether a volume
// supports its capabilities. Unconfirmed is Confirmed false and no error;
// a confirmed set that differs from the request is BadRequest.
func (e *clientCSI) ControllerValidateVolume(ctx context.Context, args *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	return e.controller(ctx, args.PluginID, args.NodeID, args.ExternalVolumeID, func(ctx context.Context, cc *csi.Client) error {
		ok, err := cc.ValidateVolumeCapabilities(ctx, &csi.ValidateRequest{
			ExternalVolumeID: args.ExternalVolumeID,
			Capabilities:     args.Capabilities,
			MountOptions:     args.MountOptions,
			Secrets:          args.Secrets,
			Parameters:       args.Parameters,
			Context:          args.Context,
		})
		reply.Confirmed = ok
		return err
	})
}

// controller runs fn against the controller of plugin pluginID on this
// node, in its turn, and codes its error for the server that asked.
func (e *clientCSI) controller(ctx context.Context, pluginID, nodeID, volume string, fn func(context.Context, *csi.Client) error) error {
	node := e.c.nodeID
	if pluginID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume %q: a plugin ID is required", volume)
	}
	if nodeID != "" && nodeID != node {
		return structs.NewError(structs.CodeBadRequest, "volume %q: a call for node %s reached node %s", volume, nodeID, node)
	}
	p, ok := e.c.registry.Get(pluginID)
	if !ok {
		return structs.NewError(structs.CodeNotFound, "volume %q: plugin %q is not running on node %s", volume, pluginID, node)
	}
	if !p.ProvidesController() {
		return structs.NewError(structs.CodeBadRequest, "volume %q: plugin %q runs only a node instance on node %s, not a controller",
			volume, pluginID, node)
	}
	socket := p.ControllerSocket
	if socket == "" {
		socket = p.Socket
	}

	release, err := e.acquire(ctx, pluginID)
	if err != nil {
		return structs.NewError(structs.CodeUnavailable, "volume %q: waiting for plugin %q on node %s: %v", volume, pluginID, node, err)
	}
	defer release()

	logger := e.c.logger.With("plugin_id", pluginID, "volume", volume)
	cc, err := csi.Dial(ctx, socket, logger, csi.WithPluginID(pluginID))
	if err == nil {
		defer cc.Close()
		err = fn(ctx, cc)
	}
	if err != nil {
		logger.Debug("controller call failed", "error", err)
		return controllerError(err, node, volume)
	}
	return nil
}

// acquire waits for a turn to call plugin pluginID's controller, until
// ctx ends; release gives the turn back.
func (e *clientCSI) acquire(ctx context.Context, pluginID string) (release func(), err error) {
	e.mu.Lock()
	if e.sems == nil {
		e.sems = map[string]*pluginSem{}
	}
	s := e.sems[pluginID]
	if s == nil {
		limit := e.limit
		if limit <= 0 {
			limit = defaultControllerConcurrency
		}
		s = &pluginSem{slots: make(chan struct{}, limit)}
		e.sems[pluginID] = s
	}
	s.users++
	e.mu.Unlock()

	done := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if s.users--; s.users == 0 {
			delete(e.sems, pluginID)
		}
	}
	select {
	case s.slots <- struct{}{}:
		return func() {
			<-s.slots
			done()
		}, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
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

// controllerError codes a failed controller call. The message names the
// volume and the node, then the plugin, the CSI call and what the plugin
// said (csi.Error).
func controllerError(err error, node, volume string) error {
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
	return structs.NewError(code, "volume %q on node %s: %v", volume, node, err)
}
