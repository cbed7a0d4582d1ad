package structs

import "fmt"

// MessageType is the first byte of every raft log entry and says how to
// decode the rest. The numbers are persisted in raft logs and snapshots:
// append only; never renumber, never reuse a retired number.
type MessageType uint8

const (
	NodeRegisterRequestType        MessageType = 0
	NodeDeregisterRequestType      MessageType = 1
	NodeUpdateStatusRequestType    MessageType = 2
	CSIVolumeRegisterRequestType   MessageType = 3
	CSIVolumeDeregisterRequestType MessageType = 4
	CSIVolumeClaimRequestType      MessageType = 5
	CSIPluginDeleteRequestType     MessageType = 6
	// 7 retired: JobRegister, written only by tests (jobs are written
	// with their placements by PlanApply).
	JobDeregisterRequestType MessageType = 8
	// 9 retired: AllocUpsert, written only by tests (allocations are
	// written by PlanApply and AllocClientUpdate).
	NodeFingerprintRequestType   MessageType = 10
	PlanApplyRequestType         MessageType = 11
	AllocClientUpdateRequestType MessageType = 12
	ACLPolicyUpsertRequestType   MessageType = 13
	ACLPolicyDeleteRequestType   MessageType = 14
	ACLTokenUpsertRequestType    MessageType = 15
	ACLTokenDeleteRequestType    MessageType = 16
	ACLBootstrapRequestType      MessageType = 17
	RootKeyUpsertRequestType     MessageType = 18
	// CSIVolumeRegisterBatchRequestType: several register requests in one
	// entry, each applied all or nothing on its own (the leader coalesces
	// concurrent registers).
	CSIVolumeRegisterBatchRequestType MessageType = 19
	// AllocClientUpdateBatchRequestType: several clients' alloc reports in
	// one entry, each applied on its own (the leader coalesces concurrent
	// Node.UpdateAlloc calls).
	AllocClientUpdateBatchRequestType MessageType = 20
	// NodeFingerprintBatchRequestType: several fingerprint deltas in one
	// entry, each applied on its own (the leader coalesces concurrent
	// Node.UpdateFingerprint calls).
	NodeFingerprintBatchRequestType MessageType = 21
	// GCRequestType: one garbage collection batch (GCRequest); the FSM
	// checks each row again before it deletes it.
	GCRequestType MessageType = 22
	// NodeUpdateEligibilityRequestType: an operator marks a node eligible
	// or ineligible for new placements.
	NodeUpdateEligibilityRequestType MessageType = 24
	// NodeUpdateDrainRequestType: a node's drain started, cancelled, or
	// a step of the leader's drainer (allocations it stops, the drain
	// complete).
	NodeUpdateDrainRequestType MessageType = 25
)

var messageTypeNames = map[MessageType]string{
	NodeRegisterRequestType:        "NodeRegister",
	NodeDeregisterRequestType:      "NodeDeregister",
	NodeUpdateStatusRequestType:    "NodeUpdateStatus",
	CSIVolumeRegisterRequestType:   "CSIVolumeRegister",
	CSIVolumeDeregisterRequestType: "CSIVolumeDeregister",
	CSIVolumeClaimRequestType:      "CSIVolumeClaim",
	CSIPluginDeleteRequestType:     "CSIPluginDelete",
	JobDeregisterRequestType:       "JobDeregister",
	NodeFingerprintRequestType:     "NodeFingerprint",
	PlanApplyRequestType:           "PlanApply",
	AllocClientUpdateRequestType:   "AllocClientUpdate",
	ACLPolicyUpsertRequestType:     "ACLPolicyUpsert",
	ACLPolicyDeleteRequestType:     "ACLPolicyDelete",
	ACLTokenUpsertRequestType:      "ACLTokenUpsert",
	ACLTokenDeleteRequestType:      "ACLTokenDelete",
	ACLBootstrapRequestType:        "ACLBootstrap",
	RootKeyUpsertRequestType:       "RootKeyUpsert",

	CSIVolumeRegisterBatchRequestType: "CSIVolumeRegisterBatch",
	AllocClientUpdateBatchRequestType: "AllocClientUpdateBatch",
	NodeFingerprintBatchRequestType:   "NodeFingerprintBatch",
	GCRequestType:                     "GC",
	NodeUpdateEligibilityRequestType:  "NodeUpdateEligibility",
	NodeUpdateDrainRequestType:        "NodeUpdateDrain",
}

func (t MessageType) String() string {
	if n, ok := messageTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}
