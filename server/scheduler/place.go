package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// placeGroup plans the group's missing allocations: up to Count, or one
// per eligible node for a system job. Its work grows with the nodes and
// the allocations it places, never with Count alone: a placement that
// fits on no node ends the group's pass, since the next one would ask the
// same nodes the same question (the same index; nothing was added to the
// plan) and get the same answers.
func (p *planning) placeGroup(tg *structs.TaskGroup, live, stopping []*structs.Allocation) (*structs.PlacementFailure, error) {
	placedBefore := len(p.plan.Allocs)
	gu := p.update(tg, live, stopping)
	live = gu.keep
	change := &structs.GroupChange{TaskGroup: tg.Name, Stop: len(gu.stopped), Replace: gu.replaced,
		Outdated: gu.outdated, Unchanged: len(live) - gu.outdated, UpdateFailed: gu.failed}
	p.groups = append(p.groups, change)
	defer func() { change.Place = len(p.plan.Allocs) - placedBefore }()
	idx := newIndexes()
	onNode := map[string]bool{}
	for _, a := range live {
		if i, ok := structs.AllocIndex(a.Name); ok {
			idx.use(i)
		}
		onNode[a.NodeID] = true
	}
	if p.job.Type == structs.JobTypeSystem {
		// A node whose allocation of the group is stopping gets its
		// replacement once that one is over: a plugin task's socket and
		// dirs are the node's, one instance at a time.
		for _, a := range stopping {
			onNode[a.NodeID] = true
		}
		for _, a := range gu.stopped {
			onNode[a.NodeID] = true
		}
	}
	reasons := map[string]map[string]bool{} // reason -> IDs of the nodes that gave it
	// Only the nodes that run every driver the group's tasks use are
	// asked; driverWhy says why the others were not.
	nodes, driverWhy := p.driverNodes(tg)
	// placeAt puts the group's allocation of index i on the first
	// candidate it fits, and reports whether one did; place, its next
	// free index.
	placeAt := func(i int, candidates []*structs.Node) (*structs.Node, error) {
		for _, n := range candidates {
			claims, why, err := p.fits(tg, n, i)
			if err != nil {
				return nil, err
			}
			if why != "" {
				if reasons[why] == nil {
					reasons[why] = map[string]bool{}
				}
				reasons[why][n.ID] = true
				continue
			}
			idx.use(i)
			return n, p.add(tg, n, i, claims)
		}
		return nil, nil
	}
	place := func(candidates []*structs.Node) (*structs.Node, error) { return placeAt(idx.free(), candidates) }
	missing := 0
	if p.job.Type == structs.JobTypeSystem {
		// A system job runs on every node that can run it; it fails only
		// when no node can.
		running := len(live)
		for _, n := range nodes {
			if onNode[n.ID] {
				continue
			}
			placed, err := place([]*structs.Node{n})
			if err != nil {
				return nil, err
			}
			if placed != nil {
				running++
			}
		}
		if running == 0 {
			missing = 1
		}
	} else {
		sp := newSpread(nodes, live, p.rules(tg))
		rescheduled, err := p.reschedule(tg, idx, sp, placeAt)
		if err != nil {
			return nil, err
		}
		for want := tg.Count - len(live) - rescheduled; want > 0; want-- {
			candidates, err := p.preferred(tg, idx.free(), sp.order())
			if err != nil {
				return nil, err
			}
			placed, err := place(candidates)
			if err != nil {
				return nil, err
			}
			if placed == nil {
				missing = want
				break
			}
			sp.add(placed)
		}
	}
	if missing == 0 {
		return nil, nil
	}
	// A node that refused only for the claim of an allocation being
	// replaced (stopped for an update, or over count) takes the place once
	// that claim is freed: a wait, not a failure.
	replacing := false
	for why := range reasons {
		replacing = replacing || gu.stopping && p.heldByStopped[why]
	}
	f := &structs.PlacementFailure{TaskGroup: tg.Name, Missing: missing, Replacing: replacing}
	if len(p.nodes) == 0 {
		f.Reasons = append(f.Reasons, noNodeReason(p.unschedulable))
	}
	if driverWhy != "" {
		f.Reasons = append(f.Reasons, driverWhy)
	}
	for why, nodes := range reasons {
		if strings.HasPrefix(why, resourceKey) {
			f.Reasons = append(f.Reasons, p.resourceReason(why, nodes))
			continue
		}
		f.Reasons = append(f.Reasons, fmt.Sprintf("%s (%d node%s)", why, len(nodes), structs.Plural(len(nodes))))
	}
	sort.Strings(f.Reasons)
	return f, nil
}

// spread orders the nodes the group may use: by its affinities and
// spread blocks (score, best first), then by how many of the group's
// allocations the state (live) and the plan put on each, fewest first. It
// is kept up to date as the group's allocations are placed, so that
// ordering costs the nodes, not the allocations placed so far.
type spread struct {
	nodes []*structs.Node
	count map[string]int
	rules placementRules
}

func newSpread(nodes []*structs.Node, live []*structs.Allocation, rules placementRules) *spread {
	sp := &spread{nodes: append([]*structs.Node(nil), nodes...), count: map[string]int{}, rules: rules}
	for _, a := range live {
		sp.count[a.NodeID]++
	}
	return sp
}

// order returns the nodes, best score first, then fewest of the group's
// allocations; ties keep the order by node ID.
func (sp *spread) order() []*structs.Node {
	score := sp.rules.scores(sp.nodes, sp.count)
	sort.SliceStable(sp.nodes, func(i, j int) bool {
		ni, nj := sp.nodes[i], sp.nodes[j]
		if si, sj := score[ni.ID], score[nj.ID]; si != sj {
			return si > sj
		}
		ci, cj := sp.count[ni.ID], sp.count[nj.ID]
		if ci != cj {
			return ci < cj
		}
		return ni.ID < nj.ID
	})
	return sp.nodes
}

func (sp *spread) add(n *structs.Node) { sp.count[n.ID]++ }

// indexes hands out a group's allocation indexes: the smallest index
// that no live or planned allocation uses. Indexes are only ever added
// in a pass, so the search resumes where it stopped.
type indexes struct {
	used map[int]bool
	next int // every index below is used
}

func newIndexes() *indexes { return &indexes{used: map[int]bool{}} }

func (x *indexes) use(i int) { x.used[i] = true }

func (x *indexes) free() int {
	for x.used[x.next] {
		x.next++
	}
	return x.next
}

// preferred orders the candidates for allocation idx of the group by its
// volumes' preferred topologies (topology_request { preferred }): a node
// in a volume's first preferred topology before one in its second, and
// those before the rest of what the volume's required topologies allow,
// summed over the group's volumes; the order among equals (scores,
// spread) is kept. It returns a copy of the candidates.
func (p *planning) preferred(tg *structs.TaskGroup, idx int, candidates []*structs.Node) ([]*structs.Node, error) {
	var vols []*structs.CSIVolume
	for _, req := range tg.Volumes {
		if req.Type != "csi" {
			continue
		}
		v, err := p.volume(req.SourceFor(idx))
		if err != nil {
			return nil, err
		}
		if v != nil && len(v.PreferredTopologies) > 0 {
			vols = append(vols, v)
		}
	}
	if len(vols) == 0 {
		return append([]*structs.Node(nil), candidates...), nil
	}
	rank := make(map[string]int, len(candidates))
	for _, n := range candidates {
		for _, v := range vols {
			rank[n.ID] += v.PreferenceRank(nodeTopology(n, v.PluginID))
		}
	}
	out := append([]*structs.Node(nil), candidates...)
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].ID] < rank[out[j].ID] })
	return out, nil
}

// nodeTopology is the topology a node's instance of plugin reports, nil
// when it reports none.
func nodeTopology(n *structs.Node, plugin string) *structs.CSITopology {
	if info := n.CSINodePlugins[plugin]; info != nil && info.NodeInfo != nil {
		return info.NodeInfo.AccessibleTopology
	}
	return nil
}
