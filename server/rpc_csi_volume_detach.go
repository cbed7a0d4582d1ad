package server

import (
	"time"

	"github.com/berth-csi/berth/structs"
)

// Detach releases every claim a node holds on a volume, for an operator
// whose node or alloc cannot finish it (`berth volume detach`). The
// volumewatcher drives each from there.
func (v *CSIVolume) Detach(args *structs.CSIVolumeDetachRequest, reply *structs.CSIVolumeDetachResponse) error {
	if args.VolumeID == "" || args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume detach: give the volume and the node (got volume %q, node %q)",
			args.VolumeID, args.NodeID)
	}
	vol, err := v.srv.State().CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol == nil {
		return structs.NewError(structs.CodeNotFound, "volume %q not found; run `berth volume status` to list volumes", args.VolumeID)
	}
	batch := &structs.CSIVolumeClaimBatchRequest{}
	for _, m := range []map[string]*structs.CSIVolumeClaim{vol.ReadClaims, vol.WriteClaims} {
		for allocID, c := range m {
			if c.NodeID == args.NodeID {
				batch.Claims = append(batch.Claims, structs.CSIVolumeClaimRequest{VolumeID: vol.ID, AllocationID: allocID,
					State: structs.CSIVolumeClaimStateUnpublishing, Timestamp: time.Now(), WriteRequest: args.WriteRequest})
				reply.Released = append(reply.Released, allocID)
			}
		}
	}
	if len(batch.Claims) == 0 {
		for allocID, c := range vol.PastClaims {
			if c.NodeID == args.NodeID {
				reply.Released = append(reply.Released, allocID) // already being released
			}
		}
		if len(reply.Released) == 0 {
			return structs.NewError(structs.CodeNotFound, "volume %q has no claim on node %s; `berth volume status %s` shows its claims",
				vol.ID, args.NodeID, vol.ID)
		}
		return nil
	}
	errs, index, err := raftApply[[]error](v.srv, structs.CSIVolumeClaimRequestType, batch)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	v.srv.volumeWatcher.Kick()
	reply.Index = index
	return nil
}
