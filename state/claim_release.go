package state

import (
	"time"

	"github.com/berth-csi/berth/structs"
)

// releaseClaim moves an alloc's claim to the later state req.State and
// records the step's outcome: LastError, NextAttemptAt and UpdatedAt, with
// Attempts counting the failures at the current state (and, as it leaves
// taken, ReleasedAt). A released claim lives in PastClaims until freed; a
// volume left with no claim loses its modes in use. Releasing a claim that
// is already gone to freed returns (nil, nil): nothing to write.
func releaseClaim(vol *structs.CSIVolume, req *structs.CSIVolumeClaimRequest) (*structs.CSIVolume, error) {
	allocID := req.AllocationID
	claim := vol.HeldClaim(allocID)
	if claim == nil {
		if req.State == structs.CSIVolumeClaimStateFreed {
			return nil, nil
		}
		return nil, errNotFound("volume %q: alloc %s holds no claim on it; nothing to move to %s",
			vol.ID, allocID, req.State)
	}
	if req.State < claim.State {
		return nil, errConflict("volume %q: the claim of alloc %s is already %s and cannot go back to %s",
			vol.ID, allocID, claim.State, req.State)
	}

	c := claim.Copy()
	if c.State == structs.CSIVolumeClaimStateTaken && req.State > c.State {
		c.ReleasedAt = req.Timestamp
	}
	if req.State > c.State {
		c.State = req.State
		c.Timeline = c.Timeline.Stamp(structs.ClaimStep(req.State), req.Timestamp)
		c.Attempts = 0
	}
	c.LastError = req.LastError
	c.NextAttemptAt = req.NextAttemptAt
	c.UpdatedAt = req.Timestamp
	if req.LastError != "" {
		c.Attempts++
	}

	next := vol.Copy() // with its claim maps, nil ones made
	delete(next.ReadClaims, allocID)
	delete(next.WriteClaims, allocID)
	if c.State == structs.CSIVolumeClaimStateFreed {
		delete(next.PastClaims, allocID)
		c.Attempts, c.LastError, c.NextAttemptAt = 0, "", time.Time{}
		next.KeepFreed(c)
	} else {
		next.PastClaims[allocID] = c
	}
	if !next.InUse() {
		next.AccessMode = structs.CSIVolumeAccessModeUnknown
		next.AttachmentMode = structs.CSIVolumeAttachmentModeUnknown
	}
	return next, nil
}
