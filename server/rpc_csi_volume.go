package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// CSIVolume serves volume registration, claims and reads.
type CSIVolume struct{ srv *Server }

// Register registers volumes or updates the mutable fields of known ones.
func (v *CSIVolume) Register(ctx context.Context, args *structs.CSIVolumeRegisterRequest, reply *structs.CSIVolumeRegisterResponse) error {
	if len(args.Volumes) == 0 {
		return structs.NewError(structs.CodeBadRequest, "volume register: the request carries no volume")
	}
	seen := map[string]bool{}
	for i, vol := range args.Volumes {
		if vol == nil {
			return structs.NewError(structs.CodeBadRequest, "volume register: volume %d of the request is empty", i+1)
		}
		if vol.Namespace == "" {
			vol.Namespace = args.RequestNamespace()
		}
		if err := v.srv.allowNamespace(args.AuthToken, vol.Namespace, acl.CapCSIWriteVolume); err != nil {
			return err
		}
		if err := vol.Validate(); err != nil {
			return err
		}
		if seen[vol.ID] {
			return structs.NewError(structs.CodeBadRequest, "volume register: volume %q is given twice in one request", vol.ID)
		}
		seen[vol.ID] = true
		// Claims and derived fields are the servers' to keep, never the caller's.
		vol.ReadClaims, vol.WriteClaims, vol.PastClaims = nil, nil, nil
		vol.ReadAllocs, vol.WriteAllocs = nil, nil
		vol.AccessMode, vol.AttachmentMode = "", ""
	}
	for _, vol := range args.Volumes {
		warning, err := v.checkRegister(ctx, vol)
		if err != nil {
			return err
		}
		if warning != "" {
			reply.Warnings = append(reply.Warnings, warning)
		}
	}
	sealed, err := v.srv.sealedVolumes(args.Volumes) // secrets never reach raft in clear
	if err != nil {
		return err
	}
	// Concurrent registers share raft entries (batcher), each applied all
	// or nothing on its own.
	index, err := v.srv.registers.apply(structs.CSIVolumeRegisterRequest{Volumes: sealed, WriteRequest: structs.WriteRequest{Namespace: args.Namespace}})
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Deregister removes volumes; see state.CSIVolumeDeregister for when a
// claimed volume may go.
func (v *CSIVolume) Deregister(args *structs.CSIVolumeDeregisterRequest, reply *structs.CSIVolumeDeregisterResponse) error {
	if len(args.VolumeIDs) == 0 {
		return structs.NewError(structs.CodeBadRequest, "volume deregister: no volume IDs given")
	}
	_, index, err := raftApply[any](v.srv, structs.CSIVolumeDeregisterRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Claim takes a claim for an allocation, or asks for one to be released
// (state unpublishing). The leader's volumewatcher alone moves a released
// claim on through node-detached, controller-detached and freed, once
// each detach is done: a caller that could set those would free a volume
// still attached, for a second writer to claim. The plugin's ID of the
// node is the servers' to find, from the node's fingerprint.
func (v *CSIVolume) Claim(ctx context.Context, args *structs.CSIVolumeClaimRequest, reply *structs.CSIVolumeClaimResponse) error {
	if args.VolumeID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume claim: missing volume ID")
	}
	if args.AllocationID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume %q: claim is missing the allocation ID", args.VolumeID)
	}
	if !args.State.Valid() {
		return structs.NewError(structs.CodeBadRequest, "volume %q: claim state %d is not a known state", args.VolumeID, int(args.State))
	}
	if args.State != structs.CSIVolumeClaimStateTaken && args.State != structs.CSIVolumeClaimStateUnpublishing {
		return structs.NewError(structs.CodeBadRequest, "volume %q: alloc %s: a claim may be taken, or released with state %s, not moved to %s: "+
			"the servers move a released claim through node-detached, controller-detached and freed as each detach is done",
			args.VolumeID, args.AllocationID, structs.CSIVolumeClaimStateUnpublishing, args.State)
	}
	if err := v.allowClaim(args); err != nil {
		return err
	}
	// What the servers find or record themselves, never the caller's: the
	// plugin's node ID (ControllerPublish would attach the volume there),
	// and a release step's outcome.
	args.ExternalNodeID, args.LastError, args.NextAttemptAt = "", "", time.Time{}
	args.Timestamp = time.Now()
	// Concurrent claims share raft entries (batcher).
	index, err := v.srv.claims.apply(*args)
	if err != nil {
		return err
	}
	vol, err := v.srv.State().CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol != nil {
		reply.Volume = vol.Sanitized()
		if args.State == structs.CSIVolumeClaimStateTaken {
			// No secrets: a node gets them from Publish, for its own allocs.
			if claim := vol.TakenClaim(args.AllocationID); claim != nil {
				if reply.PublishContext, err = v.attach(ctx, vol, claim); err != nil {
					return err
				}
			}
		}
	}
	reply.Index = index
	return nil
}

// Publish confirms the claim the plan reserved for an allocation and
// publishes the volume to the allocation's node through a controller
// instance when the plugin needs it. It writes nothing: a client never
// takes a claim of its own. A claim already being released (the alloc was
// stopped or lost) is a Conflict; a node or plugin instance not ready yet
// is NotReady, for the client to retry.
func (v *CSIVolume) Publish(ctx context.Context, args *structs.CSIVolumePublishRequest, reply *structs.CSIVolumeClaimResponse) error {
	if args.VolumeID == "" || args.AllocationID == "" || args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume publish: give the volume, the alloc and the node (got volume %q, alloc %q, node %q)",
			args.VolumeID, args.AllocationID, args.NodeID)
	}
	st := v.srv.State()
	asNode, err := v.allowPublish(st, args)
	if err != nil {
		return err
	}
	vol, err := st.CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol == nil {
		return structs.NewError(structs.CodeNotFound, "volume %q not found in namespace %q; it was deregistered or deleted after alloc %s was placed",
			args.VolumeID, args.RequestNamespace(), args.AllocationID)
	}
	held := vol.TakenClaim(args.AllocationID)
	if held == nil {
		if past := vol.PastClaims[args.AllocationID]; past != nil {
			return structs.NewError(structs.CodeConflict, "volume %q: the claim of alloc %s is being released (%s): the alloc was stopped or lost; do not mount it",
				vol.ID, args.AllocationID, past.State)
		}
		return structs.NewError(structs.CodeConflict, "volume %q: alloc %s holds no claim on it; claims are reserved when the servers place an alloc, and this one's is gone",
			vol.ID, args.AllocationID)
	}
	if held.NodeID != args.NodeID {
		return structs.NewError(structs.CodeBadRequest, "volume %q: the claim of alloc %s is for node %s, not node %s",
			vol.ID, args.AllocationID, held.NodeID, args.NodeID)
	}
	// The claim rules again, for the claim as held: the node and its
	// plugin instance must be ready now (NotReady, retried, if not yet),
	// and the claim gets the plugin's current ID for the node.
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	claim, refusal := structs.DecideClaim(vol, node, structs.ClaimAsk{AllocID: held.AllocID, NodeID: held.NodeID,
		Mode: held.Mode, AccessMode: held.AccessMode, AttachmentMode: held.AttachmentMode})
	if refusal != nil {
		return refusal
	}
	confirmed := held.Copy()
	if claim.ExternalNodeID != "" {
		confirmed.ExternalNodeID = claim.ExternalNodeID
	}
	if reply.PublishContext, err = v.attach(ctx, vol, confirmed); err != nil {
		return err
	}
	reply.Volume = vol.Sanitized()
	reply.Claim = confirmed
	if !asNode { // an operator's publish: the secrets are for the node alone
		return nil
	}
	if reply.NodeSecrets, err = v.srv.volumeSecrets(vol); err != nil {
		return err
	}
	return nil
}

// attach publishes a claimed volume to the claiming node through a
// controller instance (ControllerPublishVolume), when the plugin needs it,
// and returns the publish context the node calls take. Publishing again
// is idempotent at the plugin.
func (v *CSIVolume) attach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) (map[string]string, error) {
	allocID := claim.AllocID
	if publishes, err := v.srv.publishes(vol); err != nil || !publishes {
		return nil, err
	}
	secrets, err := v.srv.volumeSecrets(vol)
	if err != nil {
		return nil, err
	}
	req := &structs.ClientCSIControllerAttachVolumeRequest{
		PluginID:         vol.PluginID,
		ExternalVolumeID: vol.ExternalID,
		ExternalNodeID:   claim.ExternalNodeID,
		Capability:       &structs.CSIVolumeCapability{AccessMode: claim.AccessMode, AttachmentMode: claim.AttachmentMode},
		MountOptions:     vol.MountOptions,
		ReadOnly:         claim.Mode == structs.CSIVolumeClaimRead,
		Secrets:          secrets,
		VolumeContext:    vol.Context,
	}
	var resp structs.ClientCSIControllerAttachVolumeResponse
	err = v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: capAttach,
		method: "ClientCSI.ControllerAttachVolume", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp,
		volume: vol, near: claim.NodeID})
	if err != nil {
		return nil, fmt.Errorf("volume %q for alloc %s on node %s: controller publish with plugin %q: %w",
			vol.ID, allocID, claim.NodeID, vol.PluginID, err)
	}
	return resp.PublishContext, nil
}

// List lists volumes, filtered by ID prefix, plugin or claiming node.
func (v *CSIVolume) List(args *structs.CSIVolumeListRequest, reply *structs.CSIVolumeListResponse) error {
	ns := args.RequestNamespace()
	return v.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		var (
			iter memdb.ResultIterator
			err  error
		)
		switch {
		case args.NodeID != "":
			iter, err = st.CSIVolumesByNodeID(ws, args.NodeID)
		case args.PluginID != "":
			iter, err = st.CSIVolumesByPluginID(ws, ns, args.PluginID)
		default:
			iter, err = st.CSIVolumesByIDPrefix(ws, ns, args.Prefix)
		}
		if err != nil {
			return err
		}
		plugins := map[string]*structs.CSIPlugin{}
		reply.Volumes = []*structs.CSIVolumeListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			vol := raw.(*structs.CSIVolume)
			if vol.Namespace != ns || (args.Prefix != "" && !strings.HasPrefix(vol.ID, args.Prefix)) ||
				(args.PluginID != "" && vol.PluginID != args.PluginID) {
				continue
			}
			plug, ok := plugins[vol.PluginID]
			if !ok {
				if plug, err = st.CSIPluginByID(ws, vol.PluginID); err != nil {
					return err
				}
				plugins[vol.PluginID] = plug
			}
			joined := *vol // shallow: JoinPlugin sets only scalar fields
			joined.JoinPlugin(plug)
			stub := joined.Stub()
			reply.Volumes = append(reply.Volumes, stub)
		}
		if args.PluginID != "" && args.NodeID == "" {
			// The plugin's index walks them by external ID.
			slices.SortFunc(reply.Volumes, func(a, b *structs.CSIVolumeListStub) int { return strings.Compare(a.ID, b.ID) })
		}
		reply.Index, err = maxIndex(st, state.TableCSIVolumes, state.TableCSIPlugins, state.TableNodes)
		return err
	})
}

// Get reads one volume with its claims and plugin health joined in;
// Volume is nil when it does not exist. Secrets never leave the servers.
func (v *CSIVolume) Get(args *structs.CSIVolumeGetRequest, reply *structs.CSIVolumeGetResponse) error {
	if args.ID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume get: missing volume ID")
	}
	if err := v.allowGet(args); err != nil {
		return err
	}
	return v.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		vol, err := st.CSIVolumeByID(ws, args.RequestNamespace(), args.ID)
		if err != nil {
			return err
		}
		reply.Volume = nil
		if vol != nil {
			reply.Volume = vol.Sanitized()
		}
		reply.Index, err = maxIndex(st, state.TableCSIVolumes, state.TableCSIPlugins, state.TableNodes)
		return err
	})
}
