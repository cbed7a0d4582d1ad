package fsm

import "github.com/berth-csi/berth/structs"

// applyNodeUpdateEligibility marks a node eligible or ineligible.
func applyNodeUpdateEligibility(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeUpdateEligibilityRequest
	if err := decode(structs.NodeUpdateEligibilityRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateNodeEligibility(index, &req)
}

// applyNodeUpdateDrain starts or cancels a node's drain, or applies a
// step of the leader's drainer.
func applyNodeUpdateDrain(f *FSM, index uint64, buf []byte) any {
	var req structs.NodeUpdateDrainRequest
	if err := decode(structs.NodeUpdateDrainRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpdateNodeDrain(index, &req)
}
