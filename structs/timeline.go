package structs

import (
	"slices"
	"time"
)

// The steps of an allocation's and a claim's life that their timelines
// keep. The servers stamp theirs with the time of the raft entry that
// took the step (the same on every server), a client stamps its own with
// its clock. The names are persisted: never rename one.
const (
	// Servers, on the allocation.
	StepPlaced           = "placed"            // the plan that placed it applied
	StepStopRequested    = "stop-requested"    // its desired status became stop
	StepTerminalReported = "terminal-reported" // its client's report that it is over applied
	// Its client, on the allocation.
	StepReceived         = "received"          // the client's runner for it started
	StepVolumesMounted   = "volumes-mounted"   // claims confirmed, volumes staged and published
	StepTasksStarted     = "tasks-started"     // every task started once
	StepStopSeen         = "stop-seen"         // the client saw the desired stop
	StepSignalSent       = "signal-sent"       // the first kill signal sent to a task
	StepTasksExited      = "tasks-exited"      // every task dead
	StepVolumesUnmounted = "volumes-unmounted" // the client's unpublish (and unstage) done
	// Servers, on the claim.
	StepClaimTaken            = "claim-taken"            // first taken
	StepReleaseStarted        = "release-started"        // left taken (unpublishing)
	StepNodeUnpublished       = "node-unpublished"       // node-detached
	StepControllerUnpublished = "controller-unpublished" // controller-detached
	StepFreed                 = "freed"
)

// clientSteps are the steps a client may stamp on its allocations: its
// reports set no other.
var clientSteps = []string{StepReceived, StepVolumesMounted, StepTasksStarted, StepStopSeen,
	StepSignalSent, StepTasksExited, StepVolumesUnmounted}

// ClientStep reports whether step is one a client stamps.
func ClientStep(step string) bool { return slices.Contains(clientSteps, step) }

// claimSteps is the step each claim state's arrival stamps, by its number.
var claimSteps = []string{StepClaimTaken, StepReleaseStarted, StepNodeUnpublished, StepControllerUnpublished, StepFreed}

// ClaimStep is the step a claim reaching state stamps, "" for a state
// that is not defined.
func ClaimStep(state CSIVolumeClaimState) string {
	if !state.Valid() {
		return ""
	}
	return claimSteps[state]
}

// TimelineStep is one step and when it was taken.
type TimelineStep struct {
	Step string
	At   time.Time
}

// Timeline is the steps taken, each once, the first time it was taken:
// a restarted task or a renewed claim does not stamp again, so that the
// timeline tells the workflow, not the retries. At most one entry per
// step name, so it stays small.
type Timeline []TimelineStep

// Stamp returns t with step taken at at, unless t has it already (or at
// is unset: zero, or time.Unix(0, 0) from an entry that carried no time). t is not changed: a new slice is returned when it grows, so
// that a timeline shared with a stored row is never written to.
func (t Timeline) Stamp(step string, at time.Time) Timeline {
	if at.IsZero() || at.UnixNano() == 0 || step == "" || t.Has(step) {
		return t
	}
	out := make(Timeline, len(t), len(t)+1)
	copy(out, t)
	return append(out, TimelineStep{Step: step, At: at})
}

// Has reports whether step was taken.
func (t Timeline) Has(step string) bool {
	_, ok := t.At(step)
	return ok
}

// At is when step was taken, and whether it was.
func (t Timeline) At(step string) (time.Time, bool) {
	for _, s := range t {
		if s.Step == step {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// Merge returns t with the steps of in that keep accepts and t lacks.
func (t Timeline) Merge(in Timeline, keep func(step string) bool) Timeline {
	for _, s := range in {
		if keep(s.Step) {
			t = t.Stamp(s.Step, s.At)
		}
	}
	return t
}

// Sorted returns a copy of t in time order (steps stamped at the same
// instant in the order they were stamped).
func (t Timeline) Sorted() Timeline {
	out := slices.Clone(t)
	slices.SortStableFunc(out, func(a, b TimelineStep) int { return a.At.Compare(b.At) })
	return out
}
