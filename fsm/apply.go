package fsm

import (
	"time"

	"github.com/berth-csi/berth/structs"
)

// dispatch maps every message type to its apply function. Adding a message
// type means adding a row here and a golden test entry.
var dispatch = map[structs.MessageType]applyFn{
	structs.NodeRegisterRequestType:           applyNodeRegister,
	structs.NodeDeregisterRequestType:         applyNodeDeregister,
	structs.NodeUpdateStatusRequestType:       applyNodeUpdateStatus,
	structs.CSIVolumeRegisterRequestType:      applyCSIVolumeRegister,
	structs.CSIVolumeRegisterBatchRequestType: applyCSIVolumeRegisterBatch,
	structs.CSIVolumeDeregisterRequestType:    applyCSIVolumeDeregister,
	structs.CSIVolumeClaimRequestType:         applyCSIVolumeClaim,
	structs.CSIPluginDeleteRequestType:        applyCSIPluginDelete,
	structs.JobDeregisterRequestType:          applyJobDeregister,
	structs.NodeFingerprintRequestType:        applyNodeFingerprint,
	structs.PlanApplyRequestType:              applyPlan,
	structs.AllocClientUpdateRequestType:      applyAllocClientUpdate,
	structs.RootKeyUpsertRequestType:          applyRootKeyUpsert,
	structs.ACLPolicyUpsertRequestType:        applyACLPolicyUpsert,
	structs.ACLPolicyDeleteRequestType:        applyACLPolicyDelete,
	structs.ACLTokenUpsertRequestType:         applyACLTokenUpsert,
	structs.ACLTokenDeleteRequestType:         applyACLTokenDelete,
	structs.ACLBootstrapRequestType:           applyACLBootstrap,
	structs.AllocClientUpdateBatchRequestType: applyAllocClientUpdateBatch,
	structs.NodeFingerprintBatchRequestType:   applyNodeFingerprintBatch,
	structs.GCRequestType:                     applyGC,
	structs.NodeUpdateEligibilityRequestType:  applyNodeUpdateEligibility,
	structs.NodeUpdateDrainRequestType:        applyNodeUpdateDrain,
}

func applyNodeRegister(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeRegisterRequest
	if err := decode(structs.NodeRegisterRequestType, index, buf, &req); err != nil {
		return err
	}
	if req.Node == nil {
		return structs.NewError(structs.CodeBadRequest, "node register at index %d carries no node", index)
	}
	return f.State().UpsertNode(index, req.Node)
}

func applyNodeFingerprint(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeFingerprintRequest
	if err := decode(structs.NodeFingerprintRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateNodeFingerprint(index, &req)
}

// applyNodeFingerprintBatch applies the batch's fingerprint deltas in one
// transaction, each all or nothing on its own, and answers one error per
// delta ([]error).
func applyNodeFingerprintBatch(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeFingerprintBatchRequest
	if err := decode(structs.NodeFingerprintBatchRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateNodeFingerprintBatch(index, req.Fingerprints)
}

func applyNodeDeregister(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeDeregisterRequest
	if err := decode(structs.NodeDeregisterRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().DeleteNode(index, req.NodeIDs)
}

func applyNodeUpdateStatus(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeUpdateStatusRequest
	if err := decode(structs.NodeUpdateStatusRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt, req.Event)
}

func applyCSIVolumeRegister(f *FSM, index uint64, buf []byte) any {
	var req structs.CSIVolumeRegisterRequest
	if err := decode(structs.CSIVolumeRegisterRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpsertCSIVolume(index, inNamespace(&req))
}

// inNamespace is the request's volumes, those without a namespace put in
// the request's.
func inNamespace(req *structs.CSIVolumeRegisterRequest) []*structs.CSIVolume {
	for _, v := range req.Volumes {
		if v != nil && v.Namespace == "" {
			v.Namespace = req.RequestNamespace()
		}
	}
	return req.Volumes
}

// applyCSIVolumeRegisterBatch applies the batch's register requests in one
// transaction, each all or nothing on its own, and answers one error per
// request ([]error).
func applyCSIVolumeRegisterBatch(f *FSM, index uint64, buf []byte) any {
	var req structs.CSIVolumeRegisterBatchRequest
	if err := decode(structs.CSIVolumeRegisterBatchRequestType, index, buf, &req); err != nil {
		return err
	}
	reqs := make([][]*structs.CSIVolume, len(req.Registers))
	for i := range req.Registers {
		reqs[i] = inNamespace(&req.Registers[i])
	}
	return f.State().UpsertCSIVolumeBatch(index, reqs)
}

func applyCSIVolumeDeregister(f *FSM, index uint64, buf []byte) any {
	var req structs.CSIVolumeDeregisterRequest
	if err := decode(structs.CSIVolumeDeregisterRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().CSIVolumeDeregister(index, req.RequestNamespace(), req.VolumeIDs, req.Force)
}

// applyCSIVolumeClaim applies a batch of claims in one transaction and
// returns a []error aligned with the batch.
func applyCSIVolumeClaim(f *FSM, index uint64, buf []byte) any {
	var req structs.CSIVolumeClaimBatchRequest
	if err := decode(structs.CSIVolumeClaimRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().CSIVolumeClaimBatch(index, req.Claims)
}

func applyCSIPluginDelete(f *FSM, index uint64, buf []byte) any {
	var req structs.CSIPluginDeleteRequest
	if err := decode(structs.CSIPluginDeleteRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().DeleteCSIPlugin(index, req.ID)
}

func applyJobDeregister(f *FSM, index uint64, buf []byte) any {
	var req structs.JobDeregisterRequest
	if err := decode(structs.JobDeregisterRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().StopJob(index, req.RequestNamespace(), req.JobID, req.Purge, time.Unix(0, req.Timestamp))
}

func applyPlan(f *FSM, index uint64, buf []byte) any {
	var req structs.PlanApplyRequest
	if err := decode(structs.PlanApplyRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().ApplyPlan(index, &req)
}

func applyAllocClientUpdate(f *FSM, index uint64, buf []byte) any {
	var req structs.AllocClientUpdateRequest
	if err := decode(structs.AllocClientUpdateRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateAllocsFromClient(index, req.Allocs, time.Unix(0, req.Timestamp))
}

// applyAllocClientUpdateBatch applies the batch's client reports in one
// transaction, each all or nothing on its own, and answers one error per
// report ([]error).
func applyAllocClientUpdateBatch(f *FSM, index uint64, buf []byte) any {
	var req structs.AllocClientUpdateBatchRequest
	if err := decode(structs.AllocClientUpdateBatchRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateAllocsFromClientBatch(index, req.Updates)
}

// applyRootKeyUpsert writes a root key's metadata and moves volumes onto
// another key; it answers how many volumes moved.
func applyRootKeyUpsert(f *FSM, index uint64, buf []byte) any {
	var req structs.RootKeyUpsertRequest
	if err := decode(structs.RootKeyUpsertRequestType, index, buf, &req); err != nil {
		return err
	}
	rekeyed, err := f.State().UpsertRootKey(index, req.Key, req.Rekey)
	if err != nil {
		return err
	}
	return rekeyed
}
