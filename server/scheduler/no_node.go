package scheduler

import (
	"fmt"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// noNodeReason says why a group has no node at all to be placed on, from
// the nodes that are registered but not schedulable: how many are down,
// still initializing, draining, or marked ineligible, and what to do about
// the last two, which an operator did on purpose and may have forgotten.
func noNodeReason(unschedulable []*structs.Node) string {
	if len(unschedulable) == 0 {
		return "no node is registered; start a client agent (berth agent -client)"
	}
	var down, initializing, draining, ineligible int
	for _, n := range unschedulable {
		switch {
		case n.Status == structs.NodeStatusDown:
			down++
		case !n.Ready():
			initializing++
		case n.Draining():
			draining++
		default:
			ineligible++
		}
	}
	var parts []string
	add := func(count int, what string) {
		if count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count, what))
		}
	}
	add(down, "down")
	add(initializing, "initializing")
	add(draining, "draining (berth node drain -disable NODE ends a drain)")
	add(ineligible, "ineligible (berth node eligibility -enable NODE)")
	return fmt.Sprintf("no node is ready and eligible: of %d node%s, %s", len(unschedulable), structs.Plural(len(unschedulable)), strings.Join(parts, ", "))
}
