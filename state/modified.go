package state

import (
	"github.com/hashicorp/go-memdb"
)

// What changed since an index: the nodes, jobs and allocations tables are
// indexed by ModifyIndex (every write of a row sets it to the raft index
// of the write), so a reader that remembers the index it last read up to
// reads only the rows written since, not the table. The job watcher reads
// them so, to re-plan only the jobs a change may concern. A deleted row
// is not seen: deletions need a full read.

// indexModify indexes rows by ModifyIndex (not unique: one write changes
// many rows). Its keys are big-endian, so a LowerBound walks them in
// index order.
const indexModify = "modify_index"

func modifyIndexSchema() *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: indexModify, Indexer: &memdb.UintFieldIndex{Field: "ModifyIndex"}}
}

// modifiedAfter iterates the rows of table written after index, oldest
// write first, and adds to ws the watch of the table's index, which fires
// when the table is written again.
func (s *StateStore) modifiedAfter(ws memdb.WatchSet, table string, index uint64) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	if _, err := firstWatch(txn, ws, TableIndex, indexID, table); err != nil {
		return nil, err
	}
	iter, err := txn.LowerBound(table, indexModify, index+1)
	if err != nil {
		return nil, errInternal("read "+table+" modified after an index", err)
	}
	return iter, nil
}

// NodesModifiedAfter iterates the nodes written after index.
func (s *StateStore) NodesModifiedAfter(ws memdb.WatchSet, index uint64) (memdb.ResultIterator, error) {
	return s.modifiedAfter(ws, TableNodes, index)
}

// JobsModifiedAfter iterates the jobs written after index (a purged job
// is not among them).
func (s *StateStore) JobsModifiedAfter(ws memdb.WatchSet, index uint64) (memdb.ResultIterator, error) {
	return s.modifiedAfter(ws, TableJobs, index)
}

// AllocsModifiedAfter iterates the allocations written after index.
func (s *StateStore) AllocsModifiedAfter(ws memdb.WatchSet, index uint64) (memdb.ResultIterator, error) {
	return s.modifiedAfter(ws, TableAllocs, index)
}
