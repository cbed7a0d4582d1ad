package state

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// StateRestore bulk-loads rows into an empty store from a snapshot, in one
// write transaction: nothing is visible until Commit.
type StateRestore struct {
	txn *memdb.Txn
}

// Restore starts a bulk load. The caller must Commit or Abort it; the store
// accepts no other write meanwhile.
func (s *StateStore) Restore() (*StateRestore, error) {
	return &StateRestore{txn: s.db.Txn(true)}, nil
}

// rowTypeOK reports whether obj is the type of row table holds.
func rowTypeOK(table string, obj any) bool {
	switch table {
	case TableIndex:
		_, ok := obj.(*IndexEntry)
		return ok
	case TableNodes:
		_, ok := obj.(*structs.Node)
		return ok
	case TableJobs, TableJobVersions:
		_, ok := obj.(*structs.Job)
		return ok
	case TableAllocs:
		_, ok := obj.(*structs.Allocation)
		return ok
	case TableCSIPlugins:
		_, ok := obj.(*structs.CSIPlugin)
		return ok
	case TableCSIVolumes:
		_, ok := obj.(*structs.CSIVolume)
		return ok
	case TableRootKeys:
		_, ok := obj.(*structs.RootKeyMeta)
		return ok
	case TableACLPolicies:
		_, ok := obj.(*structs.ACLPolicy)
		return ok
	case TableACLTokens:
		_, ok := obj.(*structs.ACLToken)
		return ok
	}
	return false
}

// Insert adds one row to table as it is: restored rows keep their
// indexes. An allocation stopped before stops carried a reason gets the
// one its description meant (structs.AllocStop.Legacy).
func (r *StateRestore) Insert(table string, obj any) error {
	if !rowTypeOK(table, obj) {
		return errInternal("restore", fmt.Errorf("table %q cannot hold a %T row", table, obj))
	}
	if a, ok := obj.(*structs.Allocation); ok {
		obj = legacyStopReason(a)
	}
	if err := r.txn.Insert(table, obj); err != nil {
		return errInternal("restore "+table+" row", err)
	}
	return nil
}

// Commit makes every inserted row visible.
func (r *StateRestore) Commit() { r.txn.Commit() }

// Abort drops every inserted row. It does nothing after Commit.
func (r *StateRestore) Abort() { r.txn.Abort() }

// legacyStopReason returns a, or a copy of it with the stop reason its
// DesiredDescription meant when it was stopped before stops carried one.
func legacyStopReason(a *structs.Allocation) *structs.Allocation {
	if a.DesiredStatus != structs.AllocDesiredStatusStop || a.StopReason != structs.AllocStopNone {
		return a
	}
	why := structs.AllocStop{Description: a.DesiredDescription}.Legacy()
	if why.Reason == structs.AllocStopNone {
		return a
	}
	c := a.Copy()
	c.StopReason, c.ReplacedByVersion = why.Reason, why.ReplacedByVersion
	return c
}
