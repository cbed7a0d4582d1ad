package scheduler

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
)

// placementRules are a group's constraints, affinities and spreads with
// its job's, and the group's count (what spread targets' percents are
// of).
type placementRules struct {
	constraints []*structs.Constraint
	affinities  []*structs.Affinity
	spreads     []*structs.Spread
	count       int
}

// rules gathers the job's and the group's placement rules.
func (p *planning) rules(tg *structs.TaskGroup) placementRules {
	return placementRules{
		constraints: append(append([]*structs.Constraint(nil), p.job.Constraints...), tg.Constraints...),
		affinities:  append(append([]*structs.Affinity(nil), p.job.Affinities...), tg.Affinities...),
		spreads:     append(append([]*structs.Spread(nil), p.job.Spreads...), tg.Spreads...),
		count:       tg.Count,
	}
}

// fitsConstraints says why node n may not run the group: the first
// constraint (the job's, then the group's) it does not meet, or a
// distinct_hosts one it would break; "" when it meets them all.
func (p *planning) fitsConstraints(tg *structs.TaskGroup, n *structs.Node) (string, error) {
	for _, c := range p.job.Constraints {
		if why, err := p.constraintWhy(c, tg, n, ""); why != "" || err != nil {
			return why, err
		}
	}
	for _, c := range tg.Constraints {
		if why, err := p.constraintWhy(c, tg, n, tg.Name); why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// constraintWhy checks one constraint; a distinct_hosts one counts the
// job's allocations on the node (group "") or the group's.
func (p *planning) constraintWhy(c *structs.Constraint, tg *structs.TaskGroup, n *structs.Node, group string) (string, error) {
	if c == nil {
		return "", nil
	}
	if c.DistinctHosts() {
		on, err := p.jobOnNode(n.ID)
		if err != nil {
			return "", err
		}
		if group == "" && len(on) > 0 {
			return "distinct_hosts: the node runs an allocation of the job already", nil
		}
		if group != "" && on[group] > 0 {
			return fmt.Sprintf("distinct_hosts: the node runs an allocation of group %s already", structs.QuoteName(group)), nil
		}
		return "", nil
	}
	if !c.Met(n) {
		return fmt.Sprintf("constraint %s not met", c), nil
	}
	return "", nil
}

// jobOnNode counts, by group, the job's allocations on a node that hold
// their place (the live ones) and those the plan puts there.
func (p *planning) jobOnNode(nodeID string) (map[string]int, error) {
	if p.onNodeByGroup == nil {
		p.onNodeByGroup = map[string]map[string]int{}
		for _, allocs := range p.live {
			for _, a := range allocs {
				if !p.stoppedIDs[a.ID] {
					p.placedOn(a.TaskGroup, a.NodeID)
				}
			}
		}
		for _, a := range p.plan.Allocs {
			p.placedOn(a.TaskGroup, a.NodeID)
		}
	}
	return p.onNodeByGroup[nodeID], nil
}

// placedOn records a placement of the group on a node, for
// distinct_hosts.
func (p *planning) placedOn(group, nodeID string) {
	if p.onNodeByGroup == nil {
		return // counted from the live allocations and the plan when first asked
	}
	if p.onNodeByGroup[nodeID] == nil {
		p.onNodeByGroup[nodeID] = map[string]int{}
	}
	p.onNodeByGroup[nodeID][group]++
}

// scores rates each node by the affinities (a matching node gains the
// weight, or loses it for a negative one) and the spreads (a node whose
// attribute value has fewer of the group's allocations than its share
// gains), over the sum of the weights: from -1 to 1, 0 without rules.
// count is the group's allocations per node, live and planned.
func (r placementRules) scores(nodes []*structs.Node, count map[string]int) map[string]float64 {
	if len(r.affinities) == 0 && len(r.spreads) == 0 {
		return nil
	}
	total := 0.0
	for _, a := range r.affinities {
		total += abs(float64(a.Weight))
	}
	for _, s := range r.spreads {
		total += float64(s.Weight)
	}
	out := make(map[string]float64, len(nodes))
	for _, sp := range r.spreads {
		used, values := spreadUse(sp, nodes, count)
		for _, n := range nodes {
			out[n.ID] += float64(sp.Weight) * spreadScore(sp, n, used, values, r.count)
		}
	}
	for _, n := range nodes {
		for _, a := range r.affinities {
			if a.Matches(n) {
				out[n.ID] += float64(a.Weight)
			}
		}
		out[n.ID] /= total
	}
	return out
}

// spreadUse counts the group's allocations by the spread attribute's
// value on their nodes, and how many distinct values the nodes have.
func spreadUse(sp *structs.Spread, nodes []*structs.Node, count map[string]int) (map[string]int, int) {
	used := map[string]int{}
	seen := map[string]bool{}
	for _, n := range nodes {
		v, ok := structs.ResolveNodeValue(n, sp.Attribute)
		if !ok {
			continue
		}
		used[v] += count[n.ID]
		seen[v] = true
	}
	return used, len(seen)
}

// spreadScore is how much node n's value wants another allocation, from
// -1 (none wanted, or over its share) to 1 (none of its share placed):
// its target's percent of the group's count, or an even share of the
// values the nodes have.
func spreadScore(sp *structs.Spread, n *structs.Node, used map[string]int, values, count int) float64 {
	v, ok := structs.ResolveNodeValue(n, sp.Attribute)
	if !ok {
		return -1
	}
	desired := 0.0
	if len(sp.Targets) > 0 {
		for _, t := range sp.Targets {
			if t.Value == v {
				desired = float64(t.Percent) / 100 * float64(max(count, 1))
			}
		}
	} else if values > 0 {
		desired = float64(max(count, 1)) / float64(values)
	}
	if desired == 0 {
		return -1
	}
	return max(-1, min(1, (desired-float64(used[v]))/desired))
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
