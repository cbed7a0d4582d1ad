package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// CSIVolumeClaimBatch applies claims in one transaction and returns one
// error per claim, aligned with claims. A claim whose State is taken takes
// (or renews) an allocation's hold on a volume; a later State moves an
// existing claim along its release:
//
//	taken -> unpublishing -> node-detached -> controller-detached -> freed
//
// A failed claim writes nothing of itself; the others still apply.
func (s *StateStore) CSIVolumeClaimBatch(index uint64, claims []structs.CSIVolumeClaimRequest) []error {
	errs := make([]error, len(claims))

	txn := s.writeTxn(index)
	defer txn.Abort()

	wrote := false
	for i := range claims {
		w, err := applyClaim(txn, index, &claims[i])
		if err != nil {
			errs[i] = err
			continue
		}
		wrote = wrote || w
	}
	if wrote {
		if err := bumpIndex(txn, index, TableCSIVolumes); err != nil {
			for i := range errs {
				errs[i] = err // the whole batch is aborted
			}
			return errs
		}
	}
	txn.Commit()
	return errs
}

// applyClaim applies one claim request to its volume. It reports whether it
// wrote: releasing a claim that is already gone is a successful no-op.
func applyClaim(txn *memdb.Txn, index uint64, req *structs.CSIVolumeClaimRequest) (bool, error) {
	if !req.State.Valid() {
		return false, errBadRequest("volume %q: claim of alloc %s: state %s is not one of taken, unpublishing, node-detached, controller-detached, freed",
			req.VolumeID, req.AllocationID, req.State)
	}
	ns := req.WriteRequest.RequestNamespace()
	vol, err := volumeByIDTxn(txn, nil, ns, req.VolumeID)
	if err != nil {
		return false, err
	}
	if vol == nil {
		if req.State == structs.CSIVolumeClaimStateFreed {
			return false, nil // the volume, and so the claim, is gone
		}
		return false, errNotFound("volume %q not found in namespace %q; check the volume id (berth volume status)", req.VolumeID, ns)
	}

	var next *structs.CSIVolume
	if req.State == structs.CSIVolumeClaimStateTaken {
		next, err = takeClaim(txn, vol, req)
	} else {
		next, err = releaseClaim(vol, req)
	}
	if err != nil || next == nil {
		return false, err
	}
	next.ModifyIndex = index
	if err := insertVolume(txn, next); err != nil {
		return false, err
	}
	return true, nil
}

// claimMaps returns a volume's read, write and past claims.
func claimMaps(vol *structs.CSIVolume) []map[string]*structs.CSIVolumeClaim {
	return []map[string]*structs.CSIVolumeClaim{vol.ReadClaims, vol.WriteClaims, vol.PastClaims}
}
