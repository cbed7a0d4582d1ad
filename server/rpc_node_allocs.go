package server

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// GetClientAllocs returns every allocation placed on a node, with its job:
// the client's blocking query for what to run and stop.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node allocations: missing node ID")
	}
	if _, err := n.srv.allowNodeClient(n.srv.State(), args.NodeID, args.AuthToken); err != nil {
		return err
	}
	return n.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return err
		}
		reply.Allocs = []*structs.Allocation{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			reply.Allocs = append(reply.Allocs, raw.(*structs.Allocation))
		}
		reply.Index, err = maxIndex(st, state.TableAllocs)
		return err
	})
}

// UpdateAlloc records a client's report of its allocations. One that
// becomes terminal starts releasing its claims in the same write.
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if len(args.Allocs) == 0 {
		return structs.NewError(structs.CodeBadRequest, "alloc update: no allocations given")
	}
	if err := n.allowAllocUpdate(args); err != nil {
		return err
	}
	// Concurrent reports, from every client, share raft entries
	// (batcher), each applied all or nothing on its own.
	index, err := n.srv.allocUpdates.apply(structs.AllocClientUpdateRequest{Allocs: args.Allocs, Timestamp: time.Now().UnixNano()})
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// allowAllocUpdate checks that every known allocation of an update is on a
// node the caller acts for (allowNodeClient); an update of only unknown
// allocations, which changes nothing, still needs a node's secret or node
// write.
func (n *Node) allowAllocUpdate(args *structs.AllocUpdateRequest) error {
	st := n.srv.State()
	checked := map[string]bool{}
	for _, in := range args.Allocs {
		if in == nil {
			continue
		}
		alloc, err := st.AllocByID(nil, in.ID)
		if err != nil {
			return err
		}
		if alloc == nil || checked[alloc.NodeID] {
			continue
		}
		if _, err := n.srv.allowNodeClient(st, alloc.NodeID, args.AuthToken); err != nil {
			return fmt.Errorf("alloc %s: %w", alloc.ID, err)
		}
		checked[alloc.NodeID] = true
	}
	if len(checked) > 0 {
		return nil
	}
	if node, err := n.srv.nodeOfSecret(st, args.AuthToken); err != nil || node != nil {
		return err
	}
	return n.srv.allowScope(args.AuthToken, needNodeWrite)
}
