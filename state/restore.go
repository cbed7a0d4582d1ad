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

// Commit recounts the plugin rows from the node rows and makes every
// inserted row visible. The counts are the nodes' to say: a snapshot taken
// before plugin rows held counts kept the instances in them instead, which
// the recount drops.
func (r *StateRestore) Commit() error {
	if err := recountPlugins(r.txn); err != nil {
		r.txn.Abort()
		return err
	}
	r.txn.Commit()
	return nil
}

// reports tells whether node nodeID reports plugin id.
func reports(txn *memdb.Txn, nodeID, id string) bool {
	n, err := nodeByIDTxn(txn, nil, nodeID)
	c, i := instances(n, id)
	return err == nil && (c != nil || i != nil)
}

// recountPlugins sets every plugin row's counts from the nodes that report
// it, keeping its indexes.
func recountPlugins(txn *memdb.Txn) error {
	iter, err := txn.Get(TableCSIPlugins, indexID)
	if err != nil {
		return errInternal("restore: read plugins", err)
	}
	var rows []*structs.CSIPlugin
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		rows = append(rows, raw.(*structs.CSIPlugin))
	}
	for _, row := range rows {
		plug := row.Copy()
		plug.Controllers, plug.Nodes, plug.Allocations = nil, nil, nil
		plug.ControllersExpected, plug.ControllersHealthy, plug.ControllersPublishing = 0, 0, 0
		plug.NodesExpected, plug.NodesHealthy = 0, 0
		nodes, err := txn.Get(TableNodes, indexCSIPlugin, row.ID)
		if err != nil {
			return errInternal("restore: read the nodes of plugin "+row.ID, err)
		}
		for raw := nodes.Next(); raw != nil; raw = nodes.Next() {
			shareOf(raw.(*structs.Node), row.ID).add(plug, 1)
		}
		if plug.ProviderNode == "" || !reports(txn, plug.ProviderNode, plug.ID) {
			if err := newestProviderTxn(txn, plug); err != nil {
				return err
			}
		}
		if err := txn.Insert(TableCSIPlugins, plug); err != nil {
			return errInternal("restore: insert plugin "+row.ID, err)
		}
	}
	return nil
}

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
