package state

import (
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// maxNodeEvents is how many events a node keeps; older ones are dropped.
const maxNodeEvents = 10

// UpsertNode registers a node or updates it with its fingerprint. In the
// same transaction it updates the csi_plugins rows of every plugin the node
// reports now or reported before (see updateNodePlugins). An update keeps
// the node's CreateIndex and its events: events are appended by
// UpdateNodeStatus, not carried by a registration.
func (s *StateStore) UpsertNode(index uint64, node *structs.Node) error {
	if node == nil || node.ID == "" {
		return errBadRequest("node: missing id; the client must register with its node id")
	}
	if node.Status != "" && !structs.ValidNodeStatus(node.Status) {
		return errBadRequest("node %q: status %q is not one of %s", node.ID, node.Status, quoteList(nodeStatuses))
	}

	txn := s.writeTxn(index)
	defer txn.Abort()

	existing, err := nodeByIDTxn(txn, nil, node.ID)
	if err != nil {
		return err
	}
	n := node.Copy()
	if n.Status == "" {
		n.Status = structs.NodeStatusInit
	}
	for id, info := range n.CSINodePlugins {
		n.CSINodePlugins[id] = info.NodeSideChecked()
	}
	if existing != nil {
		n.CreateIndex = existing.CreateIndex
		n.Events = existing.Events // shared: events are never changed in place
		// The servers own eligibility and drain (nodes_drain.go).
		n.SchedulingEligibility, n.DrainStrategy = existing.SchedulingEligibility, existing.DrainStrategy
	} else {
		n.CreateIndex = index
		n.Events = newestEvents(n.Events)
		n.SchedulingEligibility, n.DrainStrategy = structs.NodeSchedulingEligible, nil
	}
	n.ModifyIndex = index
	if err := txn.Insert(TableNodes, n); err != nil {
		return errInternal("insert node "+n.ID, err)
	}

	pluginsChanged, err := updateNodePlugins(txn, index, n.ID, existing, n)
	if err != nil {
		return err
	}
	return commitNodeWrite(txn, index, pluginsChanged)
}

// DeleteNode removes nodes and their plugin instances, deleting plugins
// left with no instance and no job. Every node must exist, or nothing is
// deleted.
func (s *StateStore) DeleteNode(index uint64, nodeIDs []string) error {
	if len(nodeIDs) == 0 {
		return errBadRequest("node deregister: no node ids given")
	}

	txn := s.writeTxn(index)
	defer txn.Abort()

	pluginsChanged := false
	seen := make(map[string]bool, len(nodeIDs))
	for _, id := range nodeIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		existing, err := nodeByIDTxn(txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil {
			return errNotFound("node %q not found; check the node id (berth node status)", id)
		}
		if err := txn.Delete(TableNodes, existing); err != nil {
			return errInternal("delete node "+id, err)
		}
		changed, err := updateNodePlugins(txn, index, id, existing, nil)
		if err != nil {
			return err
		}
		pluginsChanged = pluginsChanged || changed
	}

	return commitNodeWrite(txn, index, pluginsChanged)
}

var nodeStatuses = []string{structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown}

// UpdateNodeStatus sets a node's status and appends event, if any, keeping
// the newest maxNodeEvents events. The healthy counts of the node's
// plugins move with its readiness, in the same transaction.
func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent) error {
	if !structs.ValidNodeStatus(status) {
		return errBadRequest("node %q: status %q is not one of %s", nodeID, status, quoteList(nodeStatuses))
	}

	txn := s.writeTxn(index)
	defer txn.Abort()

	existing, err := nodeByIDTxn(txn, nil, nodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return errNotFound("node %q not found; the client must register before it updates its status", nodeID)
	}
	n := existing.Copy()
	n.Status = status
	n.StatusUpdatedAt = updatedAt
	appendNodeEvents(n, event)
	n.ModifyIndex = index
	if err := txn.Insert(TableNodes, n); err != nil {
		return errInternal("insert node "+nodeID, err)
	}
	pluginsChanged, err := updateNodePlugins(txn, index, nodeID, existing, n)
	if err != nil {
		return err
	}
	if status == structs.NodeStatusDown {
		if err := loseNodeAllocsTxn(txn, index, nodeID, time.Unix(0, updatedAt)); err != nil {
			return err
		}
	}
	return commitNodeWrite(txn, index, pluginsChanged)
}

// appendNodeEvents appends copies of events (nil ones skipped) to n, a
// copy about to be written (Node.Copy gave it events of its own), keeping
// the newest maxNodeEvents.
func appendNodeEvents(n *structs.Node, events ...*structs.NodeEvent) {
	added := false
	for _, e := range events {
		if e == nil {
			continue
		}
		c := *e
		c.Details = maps.Clone(e.Details)
		n.Events = append(n.Events, &c)
		added = true
	}
	if added {
		n.Events = newestEvents(n.Events)
	}
}

// newestEvents keeps the last maxNodeEvents events, in a slice of its own.
func newestEvents(events []*structs.NodeEvent) []*structs.NodeEvent {
	if len(events) > maxNodeEvents {
		events = events[len(events)-maxNodeEvents:]
	}
	if events == nil {
		return nil
	}
	return append([]*structs.NodeEvent(nil), events...)
}

// NodesFrom iterates the nodes whose ID starts with prefix, in ID order,
// from the node ID from (inclusive; empty is the first): a page of a node
// list starts there without walking the nodes before it.
func (s *StateStore) NodesFrom(ws memdb.WatchSet, prefix, from string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	if from == "" || from < prefix {
		return getWatch(txn, ws, TableNodes, indexID+prefixSuffix, prefix)
	}
	// A lower bound has no watch of its own: the nodes table's index
	// entry, which every node write moves, is watched instead.
	watch, _, err := txn.FirstWatch(TableIndex, indexID, TableNodes)
	if err != nil {
		return nil, errInternal("read index of "+TableNodes, err)
	}
	ws.Add(watch)
	iter, err := txn.LowerBound(TableNodes, indexID, from)
	if err != nil {
		return nil, errInternal("read nodes from "+from, err)
	}
	return &prefixIterator{iter: iter, prefix: prefix}, nil
}

// prefixIterator ends a lower-bound scan at the first row whose ID is past
// the prefix's range.
type prefixIterator struct {
	iter   memdb.ResultIterator
	prefix string
}

func (p *prefixIterator) WatchCh() <-chan struct{} { return p.iter.WatchCh() }

func (p *prefixIterator) Next() any {
	raw := p.iter.Next()
	if raw == nil || !strings.HasPrefix(raw.(*structs.Node).ID, p.prefix) {
		return nil
	}
	return raw
}

// NodeByID returns a node, or nil if it does not exist.
func (s *StateStore) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	return nodeByIDTxn(s.db.Txn(false), ws, id)
}

func nodeByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Node, error) {
	raw, err := firstWatch(txn, ws, TableNodes, indexID, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}

// Nodes iterates every node by ID.
func (s *StateStore) Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNodes, indexID)
}

// NodesByIDPrefix iterates the nodes whose ID starts with prefix.
func (s *StateStore) NodesByIDPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNodes, indexID+prefixSuffix, prefix)
}

// commitNodeWrite bumps the nodes index, and the plugins index when plugin
// rows changed, then commits: the end of every node write.
func commitNodeWrite(txn *memdb.Txn, index uint64, pluginsChanged bool) error {
	tables := []string{TableNodes}
	if pluginsChanged {
		tables = append(tables, TableCSIPlugins)
	}
	if err := bumpIndexes(txn, index, tables...); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
