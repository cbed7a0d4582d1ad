package fsm

import "github.com/berth-csi/berth/structs"

func applyACLPolicyUpsert(f *FSM, index uint64, buf []byte) any {
	var req structs.ACLPolicyUpsertRequest
	if err := decode(structs.ACLPolicyUpsertRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpsertACLPolicies(index, req.Policies)
}

func applyACLPolicyDelete(f *FSM, index uint64, buf []byte) any {
	var req structs.ACLPolicyDeleteRequest
	if err := decode(structs.ACLPolicyDeleteRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().DeleteACLPolicies(index, req.Names)
}

func applyACLTokenUpsert(f *FSM, index uint64, buf []byte) any {
	var req structs.ACLTokenUpsertRequest
	if err := decode(structs.ACLTokenUpsertRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().UpsertACLTokens(index, req.Tokens)
}

func applyACLTokenDelete(f *FSM, index uint64, buf []byte) any {
	var req structs.ACLTokenDeleteRequest
	if err := decode(structs.ACLTokenDeleteRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().DeleteACLTokens(index, req.AccessorIDs)
}

// applyACLBootstrap writes a bootstrap's management token; the state
// refuses it (Conflict) unless its reset index is the one the request
// expects (0 before the first bootstrap). Entries written before reset
// existed carry 0, which is what their state held then.
func applyACLBootstrap(f *FSM, index uint64, buf []byte) any {
	var req structs.ACLBootstrapRequest
	if err := decode(structs.ACLBootstrapRequestType, index, buf, &req); err != nil {
		return err
	}
	return f.State().BootstrapACLToken(index, req.ResetIndex, req.Token)
}
