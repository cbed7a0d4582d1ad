package structs

import "time"

// Node scheduling eligibility: whether the scheduler may place new
// allocations on a node. A node registers eligible; an operator (berth
// node eligibility) or a drain makes it ineligible.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// NodeEventSubsystemDrain is the Subsystem of the node events a drain
// writes: its start, each step, its end.
const NodeEventSubsystemDrain = "Drain"

// ValidNodeEligibility reports whether s is an eligibility a node may be
// set to.
func ValidNodeEligibility(s string) bool {
	return s == NodeSchedulingEligible || s == NodeSchedulingIneligible
}

// Eligible reports whether the node takes new placements as far as its
// eligibility goes. A node stored before eligibility existed ("") is
// eligible.
func (n *Node) Eligible() bool {
	return n != nil && n.SchedulingEligibility != NodeSchedulingIneligible
}

// Schedulable reports whether the scheduler may place new allocations on
// the node: it is ready and eligible (not drained, not marked ineligible).
func (n *Node) Schedulable() bool { return n.Ready() && n.Eligible() }

// Draining reports whether a drain is under way on the node.
func (n *Node) Draining() bool { return n != nil && n.DrainStrategy != nil }

// DrainSpec is what an operator asks of a drain (berth node drain
// -enable).
type DrainSpec struct {
	// Deadline is how long the drain migrates allocations in order before
	// it stops whatever remains at once. 0 is no deadline; below 0 stops
	// everything at once (as Nomad's -force).
	Deadline time.Duration
	// IgnoreSystemJobs leaves the allocations of system jobs running, CSI
	// plugins run by system jobs included.
	IgnoreSystemJobs bool
}

// DrainStrategy is a node's drain under way: the spec, and when it
// started (which names the drain: the drainer's steps carry it).
type DrainStrategy struct {
	DrainSpec
	// StartedAt is when the drain was asked for, stamped by the servers.
	StartedAt time.Time
	// ForceDeadline is when what remains is stopped at once: StartedAt +
	// Deadline; zero without a deadline.
	ForceDeadline time.Time
	// StartIndex is the raft index the node's drain began at (an update
	// of the drain keeps it), set by the FSM: an allocation stopped on
	// the node since is one the drain may be migrating.
	StartIndex uint64
}

// NewDrainStrategy stamps spec as a drain asked for at now.
func NewDrainStrategy(spec DrainSpec, now time.Time) *DrainStrategy {
	d := &DrainStrategy{DrainSpec: spec, StartedAt: now}
	switch {
	case spec.Deadline < 0:
		d.ForceDeadline = now
	case spec.Deadline > 0:
		d.ForceDeadline = now.Add(spec.Deadline)
	}
	return d
}

// DeadlinePassed reports whether, at now, what remains is to be stopped
// at once.
func (d *DrainStrategy) DeadlinePassed(now time.Time) bool {
	return d != nil && !d.ForceDeadline.IsZero() && !now.Before(d.ForceDeadline)
}

// Copy returns a copy.
func (d *DrainStrategy) Copy() *DrainStrategy {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// DrainDescription is the DesiredDescription of an allocation a drain of
// node nodeID stopped.
func DrainDescription(nodeID string) string { return "stopped to drain node " + nodeID }
