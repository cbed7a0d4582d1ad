package state

import (
	"strings"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// takeClaim checks a claim request with State taken against the volume,
// the alloc, its node and the claims already held, and returns the volume
// with the claim taken.
func takeClaim(txn *memdb.Txn, vol *structs.CSIVolume, req *structs.CSIVolumeClaimRequest) (*structs.CSIVolume, error) {
	allocID := req.AllocationID
	if !req.Mode.Valid() {
		return nil, errBadRequest("volume %q: claim of alloc %s: mode %q must be %q or %q",
			vol.ID, allocID, req.Mode, structs.CSIVolumeClaimRead, structs.CSIVolumeClaimWrite)
	}

	alloc, err := allocByIDTxn(txn, nil, allocID)
	if err != nil {
		return nil, err
	}
	if alloc == nil {
		return nil, errNotFound("volume %q: alloc %s not found; a claim must name an existing allocation", vol.ID, allocID)
	}
	if alloc.TerminalStatus() {
		return nil, errConflict("volume %q: alloc %s has stopped (desired %s, client %s) and cannot claim it",
			vol.ID, allocID, alloc.DesiredStatus, alloc.ClientStatus)
	}

	nodeID := req.NodeID
	switch {
	case nodeID == "" && alloc.NodeID == "":
		return nil, errBadRequest("volume %q: alloc %s is not placed on a node yet; claim it once it is", vol.ID, allocID)
	case nodeID == "":
		nodeID = alloc.NodeID
	case nodeID != alloc.NodeID:
		return nil, errBadRequest("volume %q: claim names node %s but alloc %s runs on node %s; claim from the alloc's node",
			vol.ID, nodeID, allocID, alloc.NodeID)
	}
	node, err := nodeByIDTxn(txn, nil, nodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, errNotFound("volume %q: node %s of alloc %s not found", vol.ID, nodeID, allocID)
	}
	if !node.Ready() {
		return nil, errUnavailable("volume %q: node %s is %s, not ready; alloc %s cannot claim it there until it is", vol.ID, nodeID, node.Status, allocID)
	}
	info := node.CSINodePlugins[vol.PluginID]
	if info == nil || !info.Healthy {
		return nil, errUnavailable("volume %q: node %s has no healthy instance of plugin %q (yet)", vol.ID, nodeID, vol.PluginID)
	}

	access, attach := req.AccessMode, req.AttachmentMode
	if access == "" && attach == "" && len(vol.RequestedCapabilities) == 1 && vol.RequestedCapabilities[0] != nil {
		access, attach = vol.RequestedCapabilities[0].AccessMode, vol.RequestedCapabilities[0].AttachmentMode
	}
	if err := checkClaimModes(vol, req, nodeID, access, attach); err != nil {
		return nil, err
	}

	claim := req.ToClaim()
	claim.NodeID = nodeID
	if claim.ExternalNodeID == "" && info.NodeInfo != nil {
		claim.ExternalNodeID = info.NodeInfo.ID
	}
	claim.AccessMode, claim.AttachmentMode = access, attach
	claim.State = structs.CSIVolumeClaimStateTaken
	claim.Attempts = 0

	next := vol.Copy()
	initClaimMaps(next)
	delete(next.ReadClaims, allocID)
	delete(next.WriteClaims, allocID)
	if req.Mode == structs.CSIVolumeClaimWrite {
		next.WriteClaims[allocID] = claim
	} else {
		next.ReadClaims[allocID] = claim
	}
	next.AccessMode, next.AttachmentMode = access, attach
	return next, nil
}

// CheckClaim applies the claim rules to a claim request of
// req.AllocationID on nodeID with the given modes, against the volume as
// given (the scheduler passes a copy that holds the claims of the
// placements it is planning). It returns the error a claim would get.
func CheckClaim(vol *structs.CSIVolume, req *structs.CSIVolumeClaimRequest,
	nodeID string, access structs.CSIVolumeAccessMode, attach structs.CSIVolumeAttachmentMode) error {
	return checkClaimModes(vol, req, nodeID, access, attach)
}

// checkClaimModes applies the capability and access mode rules to a claim
// of alloc req.AllocationID on nodeID with the given modes.
func checkClaimModes(vol *structs.CSIVolume, req *structs.CSIVolumeClaimRequest,
	nodeID string, access structs.CSIVolumeAccessMode, attach structs.CSIVolumeAttachmentMode) error {
	allocID := req.AllocationID
	if !vol.HasCapability(access, attach) {
		return errBadRequest("volume %q: access mode %s with attachment mode %s is not among its capabilities (%s); claim with one of them",
			vol.ID, access, attach, capabilityList(vol))
	}
	if past, ok := vol.PastClaims[allocID]; ok && past != nil {
		return errConflict("volume %q: the claim of alloc %s is already being released (%s) and cannot be taken again",
			vol.ID, allocID, past.State)
	}
	if vol.InUse() {
		if access != vol.AccessMode {
			return errConflict("volume %q: access mode cannot change from %s to %s while claimed by %s",
				vol.ID, vol.AccessMode, access, describeClaims(sortedClaims(vol)))
		}
		if attach != vol.AttachmentMode {
			return errConflict("volume %q: attachment mode cannot change from %s to %s while claimed by %s",
				vol.ID, vol.AttachmentMode, attach, describeClaims(sortedClaims(vol)))
		}
	}

	if req.Mode == structs.CSIVolumeClaimWrite {
		if !access.AllowsWrite() {
			return errBadRequest("volume %q: access mode %s is read-only; alloc %s cannot claim it for write",
				vol.ID, access, allocID)
		}
		if access.MaxWriters() == 1 {
			for _, other := range sortedKeys(vol.WriteClaims) {
				c := vol.WriteClaims[other]
				if other != allocID && c != nil && c.State == structs.CSIVolumeClaimStateTaken {
					return errConflict("volume %q: %s allows one writer and %s holds it; alloc %s must wait until it is released",
						vol.ID, access, describeClaim(c), allocID)
				}
			}
		}
	}

	if access.SingleNode() {
		for _, c := range sortedClaims(vol) {
			if c.AllocID != allocID && c.NodeID != nodeID {
				return errConflict("volume %q: %s allows one node and %s holds it; alloc %s on node %s must wait until it is released",
					vol.ID, access, describeClaim(c), allocID, nodeID)
			}
		}
	}
	return nil
}

// capabilityList renders a volume's requested capabilities.
func capabilityList(vol *structs.CSIVolume) string {
	caps := make([]string, 0, len(vol.RequestedCapabilities))
	for _, c := range vol.RequestedCapabilities {
		if c != nil {
			caps = append(caps, c.String())
		}
	}
	return strings.Join(caps, ", ")
}
