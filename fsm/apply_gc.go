package fsm

import "github.com/berth-csi/berth/structs"

// applyGC deletes the rows of a garbage collection batch that the state's
// rules still allow at this index, and answers what it removed
// (*structs.GCResult).
func applyGC(f *FSM, index uint64, buf []byte) any {
	var req structs.GCRequest
	if err := decode(structs.GCRequestType, index, buf, &req); err != nil {
		return err
	}
	res, err := f.State().ApplyGC(index, &req)
	if err != nil {
		return err
	}
	return res
}
