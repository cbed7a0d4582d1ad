package server

import (
	"fmt"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// UpdateDrain starts a node's drain (DrainSpec set), replaces the one
// under way, or cancels it (DrainSpec nil). A drain makes the node
// ineligible at once; the leader's drainer then stops its allocations in
// order (drainer.go). A cancel leaves the node ineligible: mark it
// eligible with UpdateEligibility. Needs node write.
func (n *Node) UpdateDrain(args *structs.NodeUpdateDrainRequest, reply *structs.NodeDrainUpdateResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node drain: missing the node ID")
	}
	if args.Step != nil || args.DrainStrategy != nil {
		return structs.NewError(structs.CodeBadRequest,
			"node %s drain: DrainStrategy and Step are the servers' to set; send DrainSpec (null to cancel the drain)", args.NodeID)
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewError(structs.CodeNotFound, "node %s not found; check the node ID (berth node status)", args.NodeID)
	}
	now := n.srv.clock().Now()
	event := &structs.NodeEvent{Subsystem: structs.NodeEventSubsystemDrain, Timestamp: now}
	if args.DrainSpec == nil {
		if node.DrainStrategy == nil {
			reply.NodeModifyIndex, reply.Index = node.ModifyIndex, node.ModifyIndex
			return nil // no drain to cancel
		}
		event.Message = "drain cancelled; the node stays ineligible until marked eligible (berth node eligibility -enable)"
	} else {
		args.DrainStrategy = structs.NewDrainStrategy(*args.DrainSpec, now)
		event.Message = "drain started: " + describeDrain(args.DrainSpec)
		if node.DrainStrategy != nil {
			event.Message = "drain updated: " + describeDrain(args.DrainSpec)
		}
		event.Details = map[string]string{
			"deadline":      args.DrainSpec.Deadline.String(),
			"ignore_system": strconv.FormatBool(args.DrainSpec.IgnoreSystemJobs),
		}
	}
	args.Events = []*structs.NodeEvent{event}
	args.UpdatedAt = now.UnixNano()
	_, index, err := raftApply[any](n.srv, structs.NodeUpdateDrainRequestType, args)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = index, index
	return nil
}

// describeDrain says what a drain will do, for its node event.
func describeDrain(spec *structs.DrainSpec) string {
	deadline := "no deadline"
	switch {
	case spec.Deadline < 0:
		deadline = "no deadline wait: every allocation stopped at once"
	case spec.Deadline > 0:
		deadline = fmt.Sprintf("deadline %s", spec.Deadline)
	}
	if spec.IgnoreSystemJobs {
		return deadline + "; system jobs keep running"
	}
	return deadline
}

// UpdateEligibility marks a node eligible or ineligible for new
// placements; what runs there keeps running. A draining node cannot be
// made eligible (Conflict): cancel its drain first. Needs node write.
func (n *Node) UpdateEligibility(args *structs.NodeUpdateEligibilityRequest, reply *structs.NodeEligibilityUpdateResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node eligibility: missing the node ID")
	}
	if !structs.ValidNodeEligibility(args.Eligibility) {
		return structs.NewError(structs.CodeBadRequest, "node %s: eligibility %q is not one of %q, %q",
			args.NodeID, args.Eligibility, structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewError(structs.CodeNotFound, "node %s not found; check the node ID (berth node status)", args.NodeID)
	}
	if node.DrainStrategy != nil && args.Eligibility == structs.NodeSchedulingEligible {
		return structs.NewError(structs.CodeConflict,
			"node %s is draining and cannot be made eligible; cancel the drain first (berth node drain -disable %s)", args.NodeID, args.NodeID)
	}
	if node.Eligible() == (args.Eligibility == structs.NodeSchedulingEligible) {
		reply.NodeModifyIndex, reply.Index = node.ModifyIndex, node.ModifyIndex
		return nil // already so
	}
	now := n.srv.clock().Now()
	args.Event = &structs.NodeEvent{Subsystem: "Cluster", Timestamp: now, Message: "node marked " + args.Eligibility + " for scheduling"}
	args.UpdatedAt = now.UnixNano()
	_, index, err := raftApply[any](n.srv, structs.NodeUpdateEligibilityRequestType, args)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = index, index
	return nil
}
