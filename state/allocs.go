package state

import (
	"time"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// UpsertAllocs stores allocations, defaulting their namespace and keeping
// the CreateIndex of a version they replace. All or nothing. A terminal
// allocation starts releasing its claims in the same write.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	txn := s.db.Txn(true)
	defer txn.Abort()

	written := make([]*structs.Allocation, 0, len(allocs))
	for i, alloc := range allocs {
		if alloc == nil || alloc.ID == "" {
			return errBadRequest("alloc %d of %d: missing id", i+1, len(allocs))
		}
		a := alloc.Copy()
		if a.Namespace == "" {
			a.Namespace = structs.DefaultNamespace
		}
		existing, err := allocByIDTxn(txn, nil, a.ID)
		if err != nil {
			return err
		}
		a.CreateIndex = index
		if existing != nil {
			a.CreateIndex = existing.CreateIndex
		}
		a.ModifyIndex = index
		if err := txn.Insert(TableAllocs, a); err != nil {
			return errInternal("insert alloc "+a.ID, err)
		}
		written = append(written, a)
	}
	if err := finishAllocWrite(txn, index, written, time.Time{}); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// AllocByID returns an allocation, or nil if it does not exist.
func (s *StateStore) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	return allocByIDTxn(s.db.Txn(false), ws, id)
}

func allocByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	raw, err := firstWatch(txn, ws, TableAllocs, indexID, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Allocation), nil
}

// AllocsByNode iterates the allocations placed on a node.
func (s *StateStore) AllocsByNode(ws memdb.WatchSet, nodeID string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableAllocs, indexNodeID, nodeID)
}

// AllocsByJob iterates the allocations of a job.
func (s *StateStore) AllocsByJob(ws memdb.WatchSet, namespace, jobID string) (memdb.ResultIterator, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	return getWatch(s.db.Txn(false), ws, TableAllocs, indexJob, namespace, jobID)
}

// Allocs iterates every allocation.
func (s *StateStore) Allocs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableAllocs, indexID)
}
