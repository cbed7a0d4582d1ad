package structs

import (
	"fmt"
	"math"
	"time"
)

// ReschedulePolicy is a group's `reschedule` block: how the leader
// replaces an allocation that failed.
type ReschedulePolicy struct {
	// Attempts is how many replacements are made within Interval; not
	// read when Unlimited.
	Attempts int
	Interval time.Duration
	// Delay is the wait before the first replacement; DelayFunction
	// ("constant" or "exponential") says how it grows with each one, up
	// to MaxDelay.
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// Reschedule delay functions.
const (
	DelayConstant    = "constant"
	DelayExponential = "exponential"
)

// DelayFunctions lists the delay functions, in the order messages name
// them.
var DelayFunctions = []string{DelayConstant, DelayExponential}

// DefaultReschedulePolicy is Nomad's default for the job type: a service
// is replaced without limit, 30 s then doubling up to an hour; a batch job
// once a day, after 5 s; a system job never (it runs one allocation per
// node, restarted by its restart policy).
func DefaultReschedulePolicy(jobType string) ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: DelayExponential, MaxDelay: time.Hour, Unlimited: true}
	case JobTypeBatch:
		return ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: DelayConstant}
	}
	return ReschedulePolicy{}
}

// ReschedulePolicy is the group's reschedule block over the job type's
// defaults. Attempts and Unlimited are taken as the block has them (both
// unset turns rescheduling off; the spec parser fills in the defaults of
// what a spec leaves out); a zero duration or delay function keeps the
// default.
func (tg *TaskGroup) ReschedulePolicy(jobType string) ReschedulePolicy {
	p := DefaultReschedulePolicy(jobType)
	r := tg.Reschedule
	if r == nil || jobType == JobTypeSystem {
		return p
	}
	p.Unlimited, p.Attempts = r.Unlimited, r.Attempts
	if r.Interval > 0 {
		p.Interval = r.Interval
	}
	if r.Delay > 0 {
		p.Delay = r.Delay
	}
	if r.DelayFunction != "" {
		p.DelayFunction = r.DelayFunction
	}
	if r.MaxDelay > 0 {
		p.MaxDelay = r.MaxDelay
	}
	return p
}

// validateReschedule checks the group's reschedule block.
func (tg *TaskGroup) validateReschedule(p *problems, at string) {
	r := tg.Reschedule
	if r == nil {
		return
	}
	if r.Attempts < 0 || r.Interval < 0 || r.Delay < 0 || r.MaxDelay < 0 {
		p.add("%sreschedule: attempts, interval, delay and max_delay must not be negative", at)
	}
	p.maxDurations(at+"reschedule: ", "interval", r.Interval, "delay", r.Delay, "max_delay", r.MaxDelay)
	if r.DelayFunction != "" && r.DelayFunction != DelayConstant && r.DelayFunction != DelayExponential {
		p.add("%sreschedule: delay_function %s must be %s%s", at, QuoteName(r.DelayFunction), orList(DelayFunctions),
			didYouMean(r.DelayFunction, DelayFunctions))
	}
	if r.Unlimited && r.Attempts > 0 {
		p.add("%sreschedule: attempts %d and unlimited = true contradict; keep one", at, r.Attempts)
	}
}

// RescheduleEventsKept is how many reschedule events an allocation carries
// at least (its last ones; more when its policy's attempts are more):
// enough to count the attempts in the interval and to double a delay up
// to any sensible max_delay, without a row that grows for as long as an
// allocation keeps failing.
const RescheduleEventsKept = 16

// RescheduleEvent is one replacement of a failed allocation.
type RescheduleEvent struct {
	// Time is when the replacement was placed (unix nanoseconds).
	Time        int64
	PrevAllocID string
	PrevNodeID  string
	Delay       time.Duration
}

// NextReschedule says when the leader replaces this failed allocation,
// under policy p at its group's job type: ok is false when it is not to be
// replaced (it did not fail, is stopped, or used up its attempts). attempt
// is the replacement's number within the interval (1 for the first).
func (a *Allocation) NextReschedule(p ReschedulePolicy) (at time.Time, attempt int, ok bool) {
	if a.ClientStatus != AllocClientStatusFailed || a.DesiredStatus != AllocDesiredStatusRun || a.FailTime == 0 {
		return time.Time{}, 0, false
	}
	if !p.Unlimited && p.Attempts <= 0 {
		return time.Time{}, 0, false
	}
	failed := time.Unix(0, a.FailTime)
	recent := 0
	for _, e := range a.RescheduleEvents {
		if p.Unlimited || failed.Sub(time.Unix(0, e.Time)) < p.Interval {
			recent++
		}
	}
	if !p.Unlimited && recent >= p.Attempts {
		return time.Time{}, 0, false
	}
	return failed.Add(p.DelayFor(len(a.RescheduleEvents))), recent + 1, true
}

// DelayFor is the wait before replacement number n+1 (n made before).
// An exponential delay without max_delay stops doubling before it would
// overflow.
func (p ReschedulePolicy) DelayFor(n int) time.Duration {
	d := p.Delay
	if p.DelayFunction == DelayExponential {
		for i := 0; i < n && (p.MaxDelay <= 0 || d < p.MaxDelay) && d > 0 && d <= math.MaxInt64/2; i++ {
			d *= 2
		}
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// AttemptsText says how many replacements the policy allows: "unlimited"
// or "1 in 24h0m0s".
func (p ReschedulePolicy) AttemptsText() string {
	if p.Unlimited {
		return "unlimited"
	}
	return fmt.Sprintf("%d in %s", p.Attempts, p.Interval)
}
