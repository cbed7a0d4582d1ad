package state

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// A node's scheduling eligibility and drain belong to the servers: a
// client's registration keeps them (UpsertNode). A drain makes the node
// ineligible; its end, whether cancelled or complete, leaves it so, until
// an operator marks it eligible again.

// UpdateNodeEligibility marks a node eligible or ineligible and appends
// event, if any. A node under a drain cannot be made eligible: cancel the
// drain first.
func (s *StateStore) UpdateNodeEligibility(index uint64, req *structs.NodeUpdateEligibilityRequest) error {
	if !structs.ValidNodeEligibility(req.Eligibility) {
		return errBadRequest("node %q: eligibility %q is not one of %q, %q", req.NodeID, req.Eligibility,
			structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	txn := s.writeTxn(index)
	defer txn.Abort()

	existing, err := drainNodeTxn(txn, req.NodeID)
	if err != nil {
		return err
	}
	if existing.DrainStrategy != nil && req.Eligibility == structs.NodeSchedulingEligible {
		return errConflict("node %q is draining; it cannot be made eligible while its drain runs: cancel the drain first (berth node drain -disable %s)",
			req.NodeID, req.NodeID)
	}
	n := existing.Copy()
	n.SchedulingEligibility = req.Eligibility
	return commitDrainNodeWrite(txn, index, n, eventList(req.Event), nil)
}

// UpdateNodeDrain starts, replaces or cancels a node's drain, or applies
// a step of the leader's drainer (see structs.NodeUpdateDrainRequest).
func (s *StateStore) UpdateNodeDrain(index uint64, req *structs.NodeUpdateDrainRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	existing, err := drainNodeTxn(txn, req.NodeID)
	if err != nil {
		return err
	}
	n := existing.Copy()
	if req.Step == nil {
		n.DrainStrategy = req.DrainStrategy.Copy()
		if d := n.DrainStrategy; d != nil {
			d.StartIndex = index
			if existing.DrainStrategy != nil {
				d.StartIndex = existing.DrainStrategy.StartIndex // an update of the same drain
			}
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		}
		return commitDrainNodeWrite(txn, index, n, req.Events, nil)
	}
	step := req.Step
	if d := existing.DrainStrategy; d == nil || !d.StartedAt.Equal(step.StartedAt) {
		return errConflict("node %q: the drain started at %s is over or was replaced; its step was not applied",
			req.NodeID, step.StartedAt.UTC().Format(time.RFC3339Nano))
	}
	var stopped []*structs.Allocation
	for _, id := range step.StopAllocs {
		a, err := allocByIDTxn(txn, nil, id)
		if err != nil {
			return err
		}
		if a == nil {
			continue // collected since the drainer read it
		}
		if a.NodeID != req.NodeID {
			return errBadRequest("node %q drain: allocation %s runs on node %q, not this one", req.NodeID, id, a.NodeID)
		}
		changed, err := stopAllocsTxn(txn, index, []*structs.Allocation{a}, false, structs.StopForDrain(req.NodeID), time.Unix(0, req.UpdatedAt))
		if err != nil {
			return err
		}
		stopped = append(stopped, changed...)
	}
	if step.Complete {
		n.DrainStrategy = nil
	}
	return commitDrainNodeWrite(txn, index, n, req.Events, stopped)
}

// drainNodeTxn reads the node a drain or eligibility write names.
func drainNodeTxn(txn *memdb.Txn, nodeID string) (*structs.Node, error) {
	if nodeID == "" {
		return nil, errBadRequest("node drain or eligibility: missing node ID")
	}
	n, err := nodeByIDTxn(txn, nil, nodeID)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, errNotFound("node %q not found; check the node ID (berth node status)", nodeID)
	}
	return n, nil
}

// commitDrainNodeWrite writes n with events appended, bumps the nodes
// index, and the allocs index when allocations were stopped, then
// commits.
func commitDrainNodeWrite(txn *memdb.Txn, index uint64, n *structs.Node, events []*structs.NodeEvent, stopped []*structs.Allocation) error {
	appendNodeEvents(n, events...)
	n.ModifyIndex = index
	if err := txn.Insert(TableNodes, n); err != nil {
		return errInternal("insert node "+n.ID, err)
	}
	if len(stopped) > 0 {
		// A desired stop releases no claim: that waits for the client to
		// report the tasks dead (workloads.go).
		if err := bumpIndex(txn, index, TableAllocs); err != nil {
			return err
		}
	}
	return commitNodeWrite(txn, index, false)
}

func eventList(e *structs.NodeEvent) []*structs.NodeEvent {
	if e == nil {
		return nil
	}
	return []*structs.NodeEvent{e}
}

// DrainingNodes lists the nodes with a drain under way. It reads every
// node: the drainer calls it when its store changes, and otherwise
// follows NodesModifiedAfter.
func (s *StateStore) DrainingNodes(ws memdb.WatchSet) ([]*structs.Node, error) {
	iter, err := s.Nodes(ws)
	if err != nil {
		return nil, err
	}
	var out []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.DrainStrategy != nil {
			out = append(out, n)
		}
	}
	return out, nil
}
