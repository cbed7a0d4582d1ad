package structs

import "time"

// NodeUpdateEligibilityRequest marks a node eligible or ineligible for new
// placements (Node.UpdateEligibility, and its raft entry). Event and
// UpdatedAt are stamped by the endpoint.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string // NodeSchedulingEligible or NodeSchedulingIneligible
	Event       *NodeEvent
	UpdatedAt   int64 // unix nanoseconds
	WriteRequest
}

// NodeUpdateDrainRequest starts or cancels a node's drain
// (Node.UpdateDrain), and is the raft entry of those and of the leader's
// drainer's steps.
//
// From an operator: DrainSpec starts a drain (or replaces the one under
// way), nil cancels it; the node stays ineligible either way. The
// endpoint stamps DrainStrategy, Events and UpdatedAt; a caller's Step is
// refused.
type NodeUpdateDrainRequest struct {
	NodeID    string
	DrainSpec *DrainSpec
	// DrainStrategy is the drain to set, stamped from DrainSpec; nil
	// ends the drain.
	DrainStrategy *DrainStrategy
	// Step, set only by the leader's drainer, is progress of the drain
	// that started at Step.StartedAt: DrainStrategy is then ignored.
	Step      *DrainStep
	Events    []*NodeEvent
	UpdatedAt int64 // unix nanoseconds
	WriteRequest
}

// DrainStep is one step of the leader's drainer on a node: the
// allocations it stops and whether the drain is complete. It applies only
// while the node's drain is the one that started at StartedAt, so a step
// planned before a cancel or a new drain is refused (Conflict).
type DrainStep struct {
	StartedAt  time.Time
	StopAllocs []string
	// Complete ends the drain: its strategy is cleared and the node
	// stays ineligible.
	Complete bool
}

// NodeDrainUpdateResponse answers Node.UpdateDrain.
type NodeDrainUpdateResponse struct {
	NodeModifyIndex uint64
	WriteMeta
}

// NodeEligibilityUpdateResponse answers Node.UpdateEligibility.
type NodeEligibilityUpdateResponse struct {
	NodeModifyIndex uint64
	WriteMeta
}
