package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// resourceKey starts the reason fits gives for a node short of a
// resource: the reasons of every such node are one line per resource,
// which names a few of them (resourceReason).
const resourceKey = "\x00resources:"

// maxShortNodes is how many short nodes a resource's reason names.
const maxShortNodes = 3

// fitsResources checks that node n has room for one allocation of the
// group on top of what is allocated there; the reason, when it has not,
// is a resourceKey one per short resource, with the node's figures kept
// for resourceReason.
func (p *planning) fitsResources(tg *structs.TaskGroup, n *structs.Node) (string, error) {
	capacity := n.Capacity()
	if capacity == nil {
		return "", nil // a client that does not report resources is not limited
	}
	used, err := p.nodeUsage(n.ID)
	if err != nil {
		return "", err
	}
	short := structs.ResourceShortfall(n.Name, *capacity, used, tg.GroupAsk(n.Resources.MHzPerCore()))
	if len(short) == 0 {
		return "", nil
	}
	for _, s := range short {
		if p.shortfalls[s.Resource] == nil {
			p.shortfalls[s.Resource] = map[string]string{}
		}
		p.shortfalls[s.Resource][n.ID] = s.Text
	}
	return resourceKey + short[0].Resource, nil
}

// nodeUsage is what the allocations on a node take of it (those that use
// resources: structs.Allocation.UsesResources), the plan's placements
// included and its stops left out; read once per pass per node.
func (p *planning) nodeUsage(nodeID string) (structs.Ask, error) {
	if a, ok := p.usage[nodeID]; ok {
		return a, nil
	}
	n, err := p.st.NodeByID(nil, nodeID)
	if err != nil || n == nil {
		return structs.Ask{}, err
	}
	used, _, err := Allocated(p.st, n, func(a *structs.Allocation) bool { return p.stoppedIDs[a.ID] })
	if err != nil {
		return structs.Ask{}, err
	}
	p.usage[nodeID] = used
	return used, nil
}

// Allocated is what the allocations on node n that use resources take of
// it, but those skip names (nil: none), and how many they are: what the
// scheduler places against, and what `node status` shows.
func Allocated(st *state.StateStore, n *structs.Node, skip func(*structs.Allocation) bool) (structs.Ask, int, error) {
	iter, err := st.AllocsByNode(nil, n.ID)
	if err != nil {
		return structs.Ask{}, 0, err
	}
	mhz := n.Resources.MHzPerCore()
	var used structs.Ask
	count := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*structs.Allocation)
		if a.UsesResources() && (skip == nil || !skip(a)) {
			used = used.Add(a.Ask(mhz))
			count++
		}
	}
	return used, count, nil
}

// useResources adds a placement on node n to its usage.
func (p *planning) useResources(tg *structs.TaskGroup, n *structs.Node) error {
	used, err := p.nodeUsage(n.ID)
	if err != nil {
		return err
	}
	p.usage[n.ID] = used.Add(tg.GroupAsk(n.Resources.MHzPerCore()))
	return nil
}

// unplaced takes an allocation the plan stops off what its node's usage
// and job counts hold, when they were read before the stop (a later
// group's update stopping it after an earlier group was placed).
func (p *planning) unplaced(a *structs.Allocation) {
	if used, ok := p.usage[a.NodeID]; ok && a.UsesResources() {
		mhz := 0
		if n, err := p.st.NodeByID(nil, a.NodeID); err == nil && n != nil {
			mhz = n.Resources.MHzPerCore()
		}
		ask := a.Ask(mhz)
		p.usage[a.NodeID] = structs.Ask{CPU: used.CPU - ask.CPU, MemoryMB: used.MemoryMB - ask.MemoryMB, Cores: used.Cores - ask.Cores}
	}
	if on := p.onNodeByGroup[a.NodeID]; on != nil && on[a.TaskGroup] > 0 {
		on[a.TaskGroup]--
		if on[a.TaskGroup] == 0 {
			delete(on, a.TaskGroup)
		}
	}
}

// resourceReason renders a resource's reason for the nodes that gave it:
// the one node's figures, or how many nodes and the figures of the
// first few.
func (p *planning) resourceReason(key string, nodes map[string]bool) string {
	resource := strings.TrimPrefix(key, resourceKey)
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var texts []string
	for _, id := range ids {
		if len(texts) == maxShortNodes {
			texts = append(texts, fmt.Sprintf("and %d more", len(ids)-maxShortNodes))
			break
		}
		texts = append(texts, p.shortfalls[resource][id])
	}
	if len(ids) == 1 {
		return texts[0]
	}
	return fmt.Sprintf("not enough %s on %d nodes: %s", resource, len(ids), strings.Join(texts, "; "))
}
