package scheduler

import (
	"fmt"
	"sort"
	"time"

	"github.com/berth-csi/berth/structs"
)

// groupUpdate is what a pass decided for one group's running allocations:
// which stay, which it stops (over count, or replaced by a newer version
// of the group), and how far a rolling update has come.
type groupUpdate struct {
	keep []*structs.Allocation // still hold their places
	// outdated is how many kept allocations run an older version of the
	// group (a rolling update is under way while it is not 0).
	outdated int
	// failed says why the update stopped: a replacement failed or was not
	// healthy by its deadline; "" while it goes on.
	failed string
	// stopping: an allocation of the group is stopping (stopped in this
	// plan or before, its tasks not yet over), so a place it left may
	// wait for its claims.
	stopping bool
	// stopped are the allocations this plan stops; replaced how many of
	// them for the update (the rest are over count).
	stopped  []*structs.Allocation
	replaced int
}

// update applies the group's update and count to its live allocations
// (those holding places): it stops allocations over count, highest index
// first and outdated ones first, then as many outdated ones as the update
// block lets be replaced at once; the caller places what is then missing.
// stopping lists the group's allocations stopped before and not yet over.
func (p *planning) update(tg *structs.TaskGroup, live, stopping []*structs.Allocation) *groupUpdate {
	u := tg.UpdateStrategy()
	gu := &groupUpdate{stopping: len(stopping) > 0}
	var current, outdated []*structs.Allocation
	// Allocations of one job version run the same group: compare each
	// version's once, not each allocation's. One placed before versions
	// were kept (no submit time) is compared on its own.
	type version struct {
		v         uint64
		submitted int64
	}
	changed := map[version]bool{}
	for _, a := range live {
		key := version{v: a.JobVersion}
		if a.Job != nil {
			key.submitted = a.Job.SubmitTime
		}
		c, known := changed[key]
		if !known || key.submitted == 0 {
			c = structs.GroupChanged(a.LookupTaskGroup(), tg)
			changed[key] = c
		}
		if c {
			outdated = append(outdated, a)
		} else {
			current = append(current, a)
		}
	}
	byIndex(outdated)
	byIndex(current)
	if p.job.Type != structs.JobTypeSystem {
		// Over count: outdated ones go first, then the highest indexes.
		for len(current)+len(outdated) > tg.Count {
			var a *structs.Allocation
			if len(outdated) > 0 {
				a, outdated = outdated[len(outdated)-1], outdated[:len(outdated)-1]
			} else {
				a, current = current[len(current)-1], current[:len(current)-1]
			}
			gu.stop(p, a, structs.StopForCount(a.ID, tg.Count))
		}
	}
	inFlight := 0 // places between an old allocation stopped and a new one healthy
	var inFlightAllocs []*structs.Allocation
	for _, a := range current {
		if a.Healthy(p.now, u.MinHealthyTime) || a.ClientStatus == structs.AllocClientStatusComplete {
			continue // a batch allocation that completed is done, not in flight
		}
		inFlight++
		inFlightAllocs = append(inFlightAllocs, a)
		if why := p.unhealthy(a, u); why != "" && len(outdated) > 0 {
			gu.failed = why
		}
	}
	if p.job.Type == structs.JobTypeSystem {
		// A node whose old allocation is stopping, or over with no new
		// one yet, is in flight.
		inFlight += len(stopping)
		taken := map[string]bool{}
		for _, a := range live {
			taken[a.NodeID] = true
		}
		for _, a := range p.replacedOver {
			if a.TaskGroup == tg.Name && !taken[a.NodeID] {
				inFlight++
			}
		}
	} else if empty := tg.Count - len(current) - len(outdated); empty > 0 {
		inFlight += empty
	}
	if gu.failed == "" {
		for budget := u.MaxParallel - inFlight; budget > 0 && len(outdated) > 0; budget-- {
			gu.stop(p, outdated[0], structs.StopForUpdate(outdated[0].ID, p.version))
			gu.replaced++
			outdated = outdated[1:]
		}
	}
	gu.keep = append(current, outdated...)
	gu.outdated = len(outdated)
	if gu.outdated > 0 && gu.failed == "" {
		// The update goes on as its replacements become healthy.
		p.updating = true
		for _, a := range inFlightAllocs {
			p.wake(a, u)
		}
	}
	return gu
}

// unhealthy says why allocation a, placed by an update, will not become
// healthy: it failed, or its healthy deadline passed; "" otherwise.
func (p *planning) unhealthy(a *structs.Allocation, u structs.UpdateStrategy) string {
	switch {
	case a.ClientStatus == structs.AllocClientStatusFailed:
		return fmt.Sprintf("allocation %s failed", structs.ShortID(a.ID))
	case a.CreateTime > 0 && !p.now.Before(time.Unix(0, a.CreateTime).Add(u.HealthyDeadline)):
		return fmt.Sprintf("allocation %s was not healthy within healthy_deadline %s", structs.ShortID(a.ID), u.HealthyDeadline)
	}
	return ""
}

// wake records when a not yet healthy allocation should be looked at
// again: when it has run for min_healthy_time, or at its deadline.
func (p *planning) wake(a *structs.Allocation, u structs.UpdateStrategy) {
	var at time.Time
	switch {
	case a.ClientStatus == structs.AllocClientStatusRunning && a.RunningSince > 0:
		at = time.Unix(0, a.RunningSince).Add(u.MinHealthyTime)
	case a.CreateTime > 0:
		at = time.Unix(0, a.CreateTime).Add(u.HealthyDeadline)
	default:
		return
	}
	if at.After(p.now) && (p.next.IsZero() || at.Before(p.next)) {
		p.next = at
	}
}

// stop adds the allocation's stop, why, to the plan.
func (gu *groupUpdate) stop(p *planning, a *structs.Allocation, why structs.AllocStop) {
	p.plan.Stops = append(p.plan.Stops, why)
	if !p.stoppedIDs[a.ID] {
		p.stoppedIDs[a.ID] = true
		p.unplaced(a)
	}
	gu.stopped = append(gu.stopped, a)
	gu.stopping = true
}

// byIndex sorts allocations by their index in the group, then ID.
func byIndex(allocs []*structs.Allocation) {
	sort.Slice(allocs, func(i, j int) bool {
		a, _ := structs.AllocIndex(allocs[i].Name)
		b, _ := structs.AllocIndex(allocs[j].Name)
		if a != b {
			return a < b
		}
		return allocs[i].ID < allocs[j].ID
	})
}
