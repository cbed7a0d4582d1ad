package scheduler

import (
	"sort"

	"github.com/berth-csi/berth/structs"
)

// reschedule places the replacements of the group's failed allocations
// whose reschedule delay is over, each at its old index when that is free,
// on another node than the one it failed on when one fits, and records
// the attempt on the replacement. It returns how many it placed; one that
// fits nowhere is left to the group's other placements, which say why.
func (p *planning) reschedule(tg *structs.TaskGroup, idx *indexes, sp *spread,
	placeAt func(int, []*structs.Node) (*structs.Node, error)) (int, error) {
	var failed []*structs.Allocation
	for _, a := range p.resched {
		if a.TaskGroup == tg.Name {
			failed = append(failed, a)
		}
	}
	byIndex(failed)
	placed := 0
	for _, prev := range failed {
		if placed >= tg.Count {
			break
		}
		i, ok := structs.AllocIndex(prev.Name)
		if !ok || idx.used[i] {
			i = idx.free()
		}
		candidates, err := p.preferred(tg, i, sp.order()) // a copy
		if err != nil {
			return placed, err
		}
		sort.SliceStable(candidates, func(a, b int) bool {
			return candidates[a].ID != prev.NodeID && candidates[b].ID == prev.NodeID
		})
		n, err := placeAt(i, candidates)
		if err != nil {
			return placed, err
		}
		if n == nil {
			continue
		}
		sp.add(n)
		placed++
		alloc := p.plan.Allocs[len(p.plan.Allocs)-1]
		policy := tg.ReschedulePolicy(p.job.Type)
		alloc.PreviousAllocation = prev.ID
		events := append(append([]structs.RescheduleEvent(nil), prev.RescheduleEvents...),
			structs.RescheduleEvent{Time: p.now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID,
				Delay: policy.DelayFor(len(prev.RescheduleEvents))})
		if keep := max(structs.RescheduleEventsKept, policy.Attempts); len(events) > keep {
			events = events[len(events)-keep:] // enough to count the attempts
		}
		alloc.RescheduleEvents = events
	}
	return placed, nil
}
