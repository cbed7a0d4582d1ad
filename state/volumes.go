package state

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// UpsertCSIVolume registers volumes, or updates the mutable fields of
// registered ones, in one transaction: all or nothing. A volume's plugin
// must be running somewhere. An update may not change PluginID, ExternalID,
// Name or Parameters, and keeps the volume's claims, the modes in use and
// CreateIndex; while claimed, the capability in use must stay requested.
// Provider and the other fields joined from the plugin are never stored.
func (s *StateStore) UpsertCSIVolume(index uint64, vols []*structs.CSIVolume) error {
	return s.UpsertCSIVolumeBatch(index, [][]*structs.CSIVolume{vols})[0]
}

// UpsertCSIVolumeBatch applies several register requests, in order, in one
// transaction (so that a reader sees all of the index or none of it), each
// all or nothing as UpsertCSIVolume: a refused request writes nothing and
// is answered with its own error, the others are applied.
func (s *StateStore) UpsertCSIVolumeBatch(index uint64, reqs [][]*structs.CSIVolume) []error {
	errs := make([]error, len(reqs))
	txn := s.writeTxn(index)
	defer txn.Abort()

	wrote := false
	for i, vols := range reqs {
		prepared, err := prepareVolumesTxn(txn, index, vols)
		if err != nil {
			errs[i] = err
			continue
		}
		for _, vol := range prepared {
			if err := insertVolume(txn, vol); err != nil {
				return allFailed(errs, err)
			}
		}
		wrote = true
	}
	if wrote {
		if err := bumpIndex(txn, index, TableCSIVolumes); err != nil {
			return allFailed(errs, err)
		}
		txn.Commit()
	}
	return errs
}

// allFailed answers every request of an aborted batch with err.
func allFailed(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// prepareVolumesTxn checks one register request against txn and returns
// the rows to insert, writing nothing: a refusal leaves no trace of the
// request. Two volumes of the request on one storage volume are refused
// as if the first were registered already.
func prepareVolumesTxn(txn *memdb.Txn, index uint64, vols []*structs.CSIVolume) ([]*structs.CSIVolume, error) {
	if len(vols) == 0 {
		return nil, errBadRequest("volume register: no volumes given")
	}
	out := make([]*structs.CSIVolume, 0, len(vols))
	externals := map[[2]string]*structs.CSIVolume{} // (plugin, external ID) -> the request's volume
	for i, in := range vols {
		if in == nil {
			return nil, errBadRequest("volume register: volume %d of %d is empty", i+1, len(vols))
		}
		vol := in.Copy()
		if vol.Namespace == "" {
			vol.Namespace = structs.DefaultNamespace
		}
		if err := vol.Validate(); err != nil {
			return nil, err
		}
		plug, err := pluginByIDTxn(txn, nil, vol.PluginID)
		if err != nil {
			return nil, err
		}
		if plug == nil {
			return nil, errBadRequest("volume %q: plugin %q is not running on any node; check plugin_id or start the plugin first",
				vol.ID, vol.PluginID)
		}
		existing, err := volumeByIDTxn(txn, nil, vol.Namespace, vol.ID)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			// An update keeps its external ID (checkVolumeUpdate), so only
			// a new volume can take another's.
			if err := externalIDConflictTxn(txn, vol); err != nil {
				return nil, err
			}
		}
		key := [2]string{vol.PluginID, vol.ExternalID}
		if other := externals[key]; other != nil && (other.Namespace != vol.Namespace || other.ID != vol.ID) {
			return nil, errConflict("volume %q: external ID %s of plugin %s is already registered as volume %q in namespace %q; deregister it first",
				vol.ID, vol.ExternalID, vol.PluginID, other.ID, other.Namespace)
		}
		externals[key] = vol

		vol.JoinPlugin(nil) // derived on read, never stored
		vol.ReadAllocs, vol.WriteAllocs = nil, nil
		if existing == nil {
			vol.ReadClaims, vol.WriteClaims, vol.PastClaims = nil, nil, nil
			vol.AccessMode = structs.CSIVolumeAccessModeUnknown
			vol.AttachmentMode = structs.CSIVolumeAttachmentModeUnknown
			vol.CreateIndex = index
		} else {
			if err := checkVolumeUpdate(existing, vol); err != nil {
				return nil, err
			}
			old := existing.Copy()
			vol.ReadClaims, vol.WriteClaims, vol.PastClaims = old.ReadClaims, old.WriteClaims, old.PastClaims
			vol.AccessMode, vol.AttachmentMode = old.AccessMode, old.AttachmentMode
			vol.CreateIndex = old.CreateIndex
		}
		vol.ModifyIndex = index
		out = append(out, vol)
	}
	return out, nil
}

// CheckCSIVolumeExternalID refuses (409) a volume whose plugin's storage
// volume, its external ID, is registered already as another volume of
// any namespace: two volumes on one disk would defeat the single-writer
// rule and carry the disk across namespaces. The volume itself (its
// namespace and ID) is not another: registering it again is an update.
// UpsertCSIVolume checks the same in its transaction.
func (s *StateStore) CheckCSIVolumeExternalID(vol *structs.CSIVolume) error {
	v := *vol
	if v.Namespace == "" {
		v.Namespace = structs.DefaultNamespace
	}
	return externalIDConflictTxn(s.db.Txn(false), &v)
}

// externalIDConflictTxn is CheckCSIVolumeExternalID in txn: one index
// lookup, not a scan.
func externalIDConflictTxn(txn *memdb.Txn, vol *structs.CSIVolume) error {
	if vol.ExternalID == "" {
		return nil // Validate's to refuse
	}
	iter, err := txn.Get(TableCSIVolumes, indexExternalID, vol.PluginID, vol.ExternalID)
	if err != nil {
		return errInternal("look up volumes by external ID", err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		other := raw.(*structs.CSIVolume)
		if other.Namespace == vol.Namespace && other.ID == vol.ID {
			continue
		}
		return errConflict("volume %q: external ID %s of plugin %s is already registered as volume %q in namespace %q; deregister it first",
			vol.ID, vol.ExternalID, vol.PluginID, other.ID, other.Namespace)
	}
	return nil
}

// checkVolumeUpdate refuses an update of a registered volume that changes
// an immutable field or drops the capability in use.
func checkVolumeUpdate(old, vol *structs.CSIVolume) error {
	immutable := []struct {
		field    string
		old, new string
		equal    bool
	}{
		{"plugin_id", fmt.Sprintf("%q", old.PluginID), fmt.Sprintf("%q", vol.PluginID), old.PluginID == vol.PluginID},
		{"external_id", fmt.Sprintf("%q", old.ExternalID), fmt.Sprintf("%q", vol.ExternalID), old.ExternalID == vol.ExternalID},
		{"name", fmt.Sprintf("%q", old.Name), fmt.Sprintf("%q", vol.Name), old.Name == vol.Name},
		{"parameters", fmt.Sprintf("%v", old.Parameters), fmt.Sprintf("%v", vol.Parameters), stringMapsEqual(old.Parameters, vol.Parameters)},
	}
	for _, f := range immutable {
		if !f.equal {
			return errConflict("volume %q: %s cannot change from %s to %s while registered; deregister it first",
				vol.ID, f.field, f.old, f.new)
		}
	}
	if old.InUse() && !vol.HasCapability(old.AccessMode, old.AttachmentMode) {
		return errConflict("volume %q: capability %s/%s is in use by %s and must stay among its capabilities; stop the allocations first",
			vol.ID, old.AccessMode, old.AttachmentMode, structs.DescribeClaims(old.SortedClaims()))
	}
	return nil
}

func stringMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// CSIVolumeByID returns a volume, denormalized, or nil if it does not exist.
func (s *StateStore) CSIVolumeByID(ws memdb.WatchSet, namespace, id string) (*structs.CSIVolume, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	txn := s.db.Txn(false)
	vol, err := volumeByIDTxn(txn, ws, namespace, id)
	if err != nil || vol == nil {
		return nil, err
	}
	return denormalizeVolumeTxn(txn, ws, vol)
}

func volumeByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.CSIVolume, error) {
	raw, err := firstWatch(txn, ws, TableCSIVolumes, indexID, namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.CSIVolume), nil
}

// CSIVolumes iterates every volume row of every namespace, as stored.
func (s *StateStore) CSIVolumes(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableCSIVolumes, indexID)
}

// CSIVolumesReleasing iterates the volumes with a claim being released (a
// past claim), across namespaces; ws fires when one of them changes or
// another volume starts releasing a claim, not on other volume writes.
func (s *StateStore) CSIVolumesReleasing(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableCSIVolumes, indexReleasing, releasingKey)
}

// CSIVolumesByIDPrefix iterates the volume rows of a namespace whose ID
// starts with prefix; an empty prefix lists the namespace.
func (s *StateStore) CSIVolumesByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	return getWatch(s.db.Txn(false), ws, TableCSIVolumes, indexID+prefixSuffix, namespace, prefix)
}

// CSIVolumesByPluginID iterates the volume rows of a namespace that use a
// plugin, in the order of their external IDs.
func (s *StateStore) CSIVolumesByPluginID(ws memdb.WatchSet, namespace, pluginID string) (memdb.ResultIterator, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	iter, err := volumesOfPluginTxn(s.db.Txn(false), ws, pluginID)
	if err != nil {
		return nil, err
	}
	return memdb.NewFilterIterator(iter, func(raw any) bool {
		return raw.(*structs.CSIVolume).Namespace != namespace // true filters out
	}), nil
}

// CSIVolumesByNodeID iterates the volume rows, of every namespace, with a
// claim (taken or being released) on a node.
func (s *StateStore) CSIVolumesByNodeID(ws memdb.WatchSet, nodeID string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableCSIVolumes, indexClaimNode, nodeID)
}

// volumesOfPluginTxn iterates the volume rows, of every namespace, that use
// a plugin, in the order of their external IDs: a prefix scan of the
// (plugin, external ID) index, so that a row costs one index fewer than
// with an index of its own by plugin.
func volumesOfPluginTxn(txn *memdb.Txn, ws memdb.WatchSet, pluginID string) (memdb.ResultIterator, error) {
	return getWatch(txn, ws, TableCSIVolumes, indexExternalID+prefixSuffix, pluginID, "")
}

// insertVolume writes a volume row that the caller owns. A claim map left
// empty is stored as nil: a volume at rest carries none (they are most of
// a lean row's weight), and Copy makes them for whoever writes next.
func insertVolume(txn *memdb.Txn, vol *structs.CSIVolume) error {
	for _, m := range []*map[string]*structs.CSIVolumeClaim{&vol.ReadClaims, &vol.WriteClaims, &vol.PastClaims} {
		if len(*m) == 0 {
			*m = nil
		}
	}
	if err := txn.Insert(TableCSIVolumes, vol); err != nil {
		return errInternal("insert volume "+vol.ID, err)
	}
	return nil
}
