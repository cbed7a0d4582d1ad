package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Create makes volumes through a controller instance of their plugin and
// registers what the plugin made. The volume's name is the plugin's
// idempotency key, so a retried or interrupted create finds the volume the
// first attempt made instead of making a second.
func (v *CSIVolume) Create(ctx context.Context, args *structs.CSIVolumeCreateRequest, reply *structs.CSIVolumeCreateResponse) error {
	if len(args.Volumes) == 0 {
		return structs.NewError(structs.CodeBadRequest, "volume create: the request carries no volume")
	}
	for i, vol := range args.Volumes {
		if vol == nil {
			return structs.NewError(structs.CodeBadRequest, "volume create: volume %d of the request is empty", i+1)
		}
		if vol.Namespace == "" {
			vol.Namespace = args.RequestNamespace()
		}
		if err := v.srv.allowNamespace(args.AuthToken, vol.Namespace, acl.CapCSIWriteVolume); err != nil {
			return err
		}
		if err := validateCreate(vol); err != nil {
			return err
		}
		vol.NodeExpansion = nil // the servers' to keep, never the caller's
	}
	for _, vol := range args.Volumes {
		created, err := v.create(ctx, vol)
		if err != nil {
			return err
		}
		reply.Volumes = append(reply.Volumes, created.Sanitized())
		reply.Index = created.ModifyIndex
	}
	return nil
}

// validateCreate checks what only a create needs; the rest is Validate's.
func validateCreate(vol *structs.CSIVolume) error {
	if vol.ExternalID != "" {
		return structs.NewError(structs.CodeBadRequest,
			"volume %q: external_id is made by the plugin on create; use `berth volume register` for a volume that exists", vol.ID)
	}
	if vol.SnapshotID != "" && vol.CloneID != "" {
		return structs.NewError(structs.CodeBadRequest, "volume %q: give snapshot_id or clone_id, not both", vol.ID)
	}
	probe := vol.Copy()
	probe.ExternalID = "to-be-created"
	return probe.Validate()
}

func (v *CSIVolume) create(ctx context.Context, vol *structs.CSIVolume) (*structs.CSIVolume, error) {
	existing, err := v.srv.State().CSIVolumeByID(nil, vol.Namespace, vol.ID)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if existing.PluginID != vol.PluginID || existing.Name != vol.Name {
			return nil, structs.NewError(structs.CodeConflict,
				"volume %q is already registered with plugin %q and name %q; deregister or delete it first",
				vol.ID, existing.PluginID, existing.Name)
		}
		return v.regrow(ctx, existing, vol) // created before: the retry finds it
	}
	if err := v.srv.checkTopology(vol); err != nil {
		return nil, err
	}
	name := vol.Name
	if name == "" {
		name = vol.ID
		vol.Name = name
	}
	cloneID, cloneOf, err := v.cloneSource(vol)
	if err != nil {
		return nil, err
	}
	capMin, err := v.restoreCapacity(ctx, vol, cloneOf)
	if err != nil {
		return nil, err
	}
	// Sealed before the plugin is called: with no root key on this server
	// yet, nothing is made at the provider.
	sealed, err := v.srv.sealSecrets(vol, vol.Secrets)
	if err != nil {
		return nil, err
	}
	req := &structs.ClientCSIControllerCreateVolumeRequest{
		PluginID:            vol.PluginID,
		Name:                name,
		CapacityMin:         capMin,
		CapacityMax:         vol.RequestedCapacityMax,
		Capabilities:        vol.RequestedCapabilities,
		MountOptions:        vol.MountOptions,
		Secrets:             vol.Secrets,
		Parameters:          vol.Parameters,
		SnapshotID:          vol.SnapshotID,
		CloneID:             cloneID,
		RequiredTopologies:  vol.Topologies,
		PreferredTopologies: vol.PreferredTopologies,
	}
	need := capCreateDelete
	if cloneID != "" {
		need = capClone
	}
	var resp structs.ClientCSIControllerCreateVolumeResponse
	err = v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: need,
		method: "ClientCSI.ControllerCreateVolume", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp,
		volume: vol})
	if err != nil {
		return nil, fmt.Errorf("volume %q: create with plugin %q: %w", vol.ID, vol.PluginID, err)
	}

	vol.ExternalID = resp.ExternalVolumeID
	vol.Capacity = resp.CapacityBytes
	if len(resp.Topologies) > 0 {
		vol.Topologies = resp.Topologies
	}
	if len(resp.VolumeContext) > 0 {
		if vol.Context == nil {
			vol.Context = map[string]string{}
		}
		for k, val := range resp.VolumeContext {
			vol.Context[k] = val
		}
	}
	// The plugin may answer with a storage volume that another volume is
	// registered on (a name a create of it used before): refuse it, and
	// leave it at the provider, where it is that volume's.
	if err := v.srv.State().CheckCSIVolumeExternalID(vol); err != nil {
		return nil, fmt.Errorf("volume %q: plugin %q answered the create with a volume berth knows: %w", vol.ID, vol.PluginID, err)
	}
	stored := vol.Copy()
	stored.Secrets, stored.EncryptedSecrets = nil, sealed
	if _, _, err := raftApply[any](v.srv, structs.CSIVolumeRegisterRequestType,
		&structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{stored}}); err != nil {
		return nil, fmt.Errorf("volume %q was created by plugin %q as %q but could not be registered: %w; "+
			"run `berth volume create` again (it finds the same volume by name) or delete it at the provider",
			vol.ID, vol.PluginID, vol.ExternalID, err)
	}
	return v.srv.State().CSIVolumeByID(nil, vol.Namespace, vol.ID)
}

// Delete deletes volumes at the provider, then deregisters them. A claimed
// volume is refused before the plugin is called. If the deregistration
// fails after the provider deleted the volume, the error says so; running
// the delete again finishes it (deleting a deleted volume succeeds).
func (v *CSIVolume) Delete(ctx context.Context, args *structs.CSIVolumeDeleteRequest, reply *structs.CSIVolumeDeleteResponse) error {
	if len(args.VolumeIDs) == 0 {
		return structs.NewError(structs.CodeBadRequest, "volume delete: no volume IDs given")
	}
	ns := args.RequestNamespace()
	for _, id := range args.VolumeIDs {
		vol, err := v.srv.State().CSIVolumeByID(nil, ns, id)
		if err != nil {
			return err
		}
		if vol == nil {
			return structs.NewError(structs.CodeNotFound, "volume %q not found; run `berth volume status` to list them", id)
		}
		if vol.InUse() {
			return structs.NewError(structs.CodeConflict,
				"volume %q is claimed by allocs %v: stop them and let their claims be released before deleting it",
				id, vol.ClaimingAllocs())
		}
		secrets := args.Secrets
		if len(secrets) == 0 {
			if secrets, err = v.srv.volumeSecrets(vol); err != nil {
				return err
			}
		}
		req := &structs.ClientCSIControllerDeleteVolumeRequest{PluginID: vol.PluginID, ExternalVolumeID: vol.ExternalID, Secrets: secrets}
		err = v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: capCreateDelete,
			method: "ClientCSI.ControllerDeleteVolume", node: &req.NodeID, opts: &req.QueryOptions,
			args: req, reply: &structs.ClientCSIControllerDeleteVolumeResponse{}, volume: vol})
		if err != nil {
			return fmt.Errorf("volume %q: delete with plugin %q: %w; it is still registered", id, vol.PluginID, err)
		}
		_, index, err := raftApply[any](v.srv, structs.CSIVolumeDeregisterRequestType,
			&structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{id}, WriteRequest: args.WriteRequest})
		if err != nil {
			return fmt.Errorf("volume %q was deleted by plugin %q but is still registered: %w; run `berth volume delete %s` again",
				id, vol.PluginID, err, id)
		}
		reply.Index = index
	}
	return nil
}

// cloneSource returns the plugin's ID of the volume to clone, and the
// registered volume it is, if berth knows it: clone_id names a registered
// volume of the same plugin by berth's ID, or the plugin's own volume ID.
func (v *CSIVolume) cloneSource(vol *structs.CSIVolume) (string, *structs.CSIVolume, error) {
	if vol.CloneID == "" {
		return "", nil, nil
	}
	src, err := v.srv.State().CSIVolumeByID(nil, vol.Namespace, vol.CloneID)
	if err != nil || src == nil {
		return vol.CloneID, nil, err
	}
	if src.PluginID != vol.PluginID {
		return "", nil, structs.NewError(structs.CodeBadRequest,
			"volume %q: clone_id %q is a volume of plugin %q; a clone must come from a volume of the same plugin (%q)",
			vol.ID, vol.CloneID, src.PluginID, vol.PluginID)
	}
	return src.ExternalID, src, nil
}

// restoreCapacity is the least capacity to ask for: the volume's
// capacity_min, else, for a restore, the snapshot's size (or, when the
// plugin does not say it, that of the snapshot's source volume if berth
// knows it), and for a clone the source volume's (drivers such as the
// kubernetes-csi hostpath driver refuse a restore with no capacity
// range). Unknown sizes ask for none; a snapshot the plugin does not list
// is NotFound, and one it could not be asked about has an unknown size.
func (v *CSIVolume) restoreCapacity(ctx context.Context, vol, cloneOf *structs.CSIVolume) (int64, error) {
	if vol.RequestedCapacityMin > 0 {
		return vol.RequestedCapacityMin, nil
	}
	var size int64
	switch {
	case vol.SnapshotID != "":
		sn, err := v.srv.findSnapshot(ctx, vol.PluginID, vol.SnapshotID, vol.Secrets)
		switch {
		case errors.Is(err, structs.ErrNotFound):
			return 0, fmt.Errorf("volume %q: snapshot_id: %w", vol.ID, err)
		case err != nil:
			v.srv.logger.Warn("cannot read the snapshot's size; restoring with no capacity range", "volume_id", vol.ID,
				"snapshot_id", vol.SnapshotID, "error", err)
		case sn != nil:
			if size = sn.SizeBytes; size == 0 {
				size = capacityAt(v.srv.State(), vol.Namespace, vol.PluginID, sn.ExternalSourceVolumeID)
			}
		}
	case cloneOf != nil:
		size = cloneOf.Capacity
	}
	if vol.RequestedCapacityMax > 0 && size > vol.RequestedCapacityMax {
		return 0, structs.NewError(structs.CodeBadRequest, "volume %q: capacity_max %d is smaller than its source (%d bytes); raise it or leave it out",
			vol.ID, vol.RequestedCapacityMax, size)
	}
	return size, nil
}

// capacityAt is the capacity berth knows of the plugin's volume
// externalID, 0 if none: the largest of the registered volumes that name
// it (a volume registered by hand may not know its capacity).
func capacityAt(st *state.StateStore, namespace, pluginID, externalID string) int64 {
	if externalID == "" {
		return 0
	}
	iter, err := st.CSIVolumesByPluginID(nil, namespace, pluginID)
	if err != nil {
		return 0
	}
	var size int64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if vol := raw.(*structs.CSIVolume); vol.ExternalID == externalID {
			size = max(size, vol.Capacity)
		}
	}
	return size
}

// regrow answers a create of a volume that exists: the same volume, grown
// first when the create asks for more capacity than it has.
func (v *CSIVolume) regrow(ctx context.Context, existing, vol *structs.CSIVolume) (*structs.CSIVolume, error) {
	upd := existing.Copy()
	upd.RequestedCapacityMin, upd.RequestedCapacityMax = vol.RequestedCapacityMin, vol.RequestedCapacityMax
	secrets, err := v.srv.volumeSecrets(existing)
	if err != nil {
		return nil, err
	}
	upd.Secrets = secrets
	if err := v.expand(ctx, existing, upd); err != nil {
		return nil, err
	}
	if upd.Capacity == existing.Capacity && upd.RequestedCapacityMin == existing.RequestedCapacityMin &&
		upd.RequestedCapacityMax == existing.RequestedCapacityMax && sameNodeExpansion(upd.NodeExpansion, existing.NodeExpansion) {
		return existing, nil
	}
	if err := v.srv.sealVolumeSecrets(upd); err != nil {
		return nil, err
	}
	if _, _, err := raftApply[any](v.srv, structs.CSIVolumeRegisterRequestType,
		&structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{upd}}); err != nil {
		return nil, fmt.Errorf("volume %q was expanded by plugin %q to %d bytes but could not be recorded: %w; run the create again",
			vol.ID, vol.PluginID, upd.Capacity, err)
	}
	return v.srv.State().CSIVolumeByID(nil, vol.Namespace, vol.ID)
}
