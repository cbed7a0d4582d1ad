package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// CSIVolumeDeregister removes volumes from a namespace, all or nothing. A
// volume with any claim (taken or being released) is refused, naming every
// claiming alloc and its node, unless force is set and every claiming alloc
// has stopped or no longer exists.
func (s *StateStore) CSIVolumeDeregister(index uint64, namespace string, ids []string, force bool) error {
	if len(ids) == 0 {
		return errBadRequest("volume deregister: no volume ids given")
	}
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}

	txn := s.writeTxn(index)
	defer txn.Abort()

	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		vol, err := volumeByIDTxn(txn, nil, namespace, id)
		if err != nil {
			return err
		}
		if vol == nil {
			return errNotFound("volume %q not found in namespace %q; check the volume id (berth volume status)", id, namespace)
		}
		if err := checkDeregister(txn, vol, force); err != nil {
			return err
		}
		if err := txn.Delete(TableCSIVolumes, vol); err != nil {
			return errInternal("delete volume "+id, err)
		}
	}

	if err := bumpIndex(txn, index, TableCSIVolumes); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// checkDeregister refuses to deregister a claimed volume, unless force and
// no claiming alloc is still live.
func checkDeregister(txn *memdb.Txn, vol *structs.CSIVolume, force bool) error {
	if !vol.InUse() {
		return nil
	}
	claims := vol.SortedClaims()
	if !force {
		return errConflict("volume %q is claimed by %s: stop %s first, or use -force once %s stopped",
			vol.ID, structs.DescribeClaims(claims),
			plural(len(claims), "the allocation", "the allocations"), plural(len(claims), "it has", "they have"))
	}
	var live []*structs.CSIVolumeClaim
	for _, c := range claims {
		alloc, err := allocByIDTxn(txn, nil, c.AllocID)
		if err != nil {
			return err
		}
		if alloc != nil && !alloc.TerminalStatus() {
			live = append(live, c)
		}
	}
	if len(live) > 0 {
		return errConflict("volume %q cannot be force-deregistered while claimed by live %s: stop %s first",
			vol.ID, structs.DescribeClaims(live), plural(len(live), "that allocation", "those allocations"))
	}
	return nil
}
