package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// checkUsageReports refuses a delta whose usage reports are malformed
// (no alloc or volume ID, no usage, figures no plugin can mean) or too
// many; it reads nothing.
func checkUsageReports(nodeID string, reports []*structs.CSIVolumeUsageReport) error {
	if len(reports) > structs.MaxUsageReports {
		return errBadRequest("node %q: %d volume usage reports in one update, more than %d", nodeID, len(reports), structs.MaxUsageReports)
	}
	for i, r := range reports {
		if r == nil || r.AllocID == "" || r.VolumeID == "" {
			return errBadRequest("node %q: volume usage report %d of %d names no alloc or no volume", nodeID, i+1, len(reports))
		}
		if err := r.Usage.Validate(); err != nil {
			return errBadRequest("node %q: usage of volume %q for alloc %s: %v", nodeID, r.VolumeID, r.AllocID, err)
		}
	}
	return nil
}

// applyUsageTxn sets each report's usage on the claim of its allocation,
// which must run on nodeID and hold a claim on the volume (taken, or
// being released). A report that matches no such claim is dropped: the
// allocation was stopped, or collected, since the client collected it;
// so is one whose figures the claim has already. It reports whether it
// wrote a volume.
func applyUsageTxn(txn *memdb.Txn, index uint64, nodeID string, reports []*structs.CSIVolumeUsageReport) (bool, error) {
	wrote := false
	for _, r := range reports {
		alloc, err := allocByIDTxn(txn, nil, r.AllocID)
		if err != nil {
			return wrote, err
		}
		if alloc == nil || alloc.NodeID != nodeID {
			continue
		}
		vol, err := volumeByIDTxn(txn, nil, alloc.Namespace, r.VolumeID)
		if err != nil {
			return wrote, err
		}
		if vol == nil {
			continue
		}
		held := vol.HeldClaim(r.AllocID)
		if held == nil || held.NodeID != nodeID || held.Usage.SameFigures(r.Usage) {
			continue
		}
		next := vol.Copy()
		for _, m := range claimMaps(next) {
			if c := m[r.AllocID]; c != nil {
				c = c.Copy()
				c.Usage = r.Usage.Copy()
				m[r.AllocID] = c
			}
		}
		next.ModifyIndex = index
		if err := insertVolume(txn, next); err != nil {
			return wrote, err
		}
		wrote = true
	}
	return wrote, nil
}
