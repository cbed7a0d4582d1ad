package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// takeClaim checks a claim request with State taken against the alloc and
// its node, then applies the claim rules (structs.DecideClaim) against the
// volume and the claims it holds, and returns the volume with the claim
// taken. Taking a claim the alloc already holds, with the same modes,
// renews it.
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

	claim, refusal := structs.DecideClaim(vol, node, structs.ClaimAsk{AllocID: allocID, NodeID: nodeID, Mode: req.Mode,
		AccessMode: req.AccessMode, AttachmentMode: req.AttachmentMode})
	if refusal != nil {
		return nil, refusal
	}
	if req.ExternalNodeID != "" {
		claim.ExternalNodeID = req.ExternalNodeID
	}
	claim.UpdatedAt = req.Timestamp
	// A renewal keeps the time it was first taken, what its release
	// must undo, and the usage last reported.
	if old := vol.HeldClaim(allocID); old != nil {
		claim.Timeline, claim.ControllerPublish, claim.Usage = old.Timeline, old.ControllerPublish, old.Usage
	}
	plug, err := pluginByIDTxn(txn, nil, vol.PluginID)
	if err != nil {
		return nil, err
	}
	if plug.PublishesThroughController() {
		claim.ControllerPublish = true
	}
	claim.Timeline = claim.Timeline.Stamp(structs.StepClaimTaken, req.Timestamp)

	next := vol.Copy() // with its claim maps, nil ones made
	delete(next.ReadClaims, allocID)
	delete(next.WriteClaims, allocID)
	if claim.Mode == structs.CSIVolumeClaimWrite {
		next.WriteClaims[allocID] = claim
	} else {
		next.ReadClaims[allocID] = claim
	}
	next.AccessMode, next.AttachmentMode = claim.AccessMode, claim.AttachmentMode
	return next, nil
}
