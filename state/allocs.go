package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

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
