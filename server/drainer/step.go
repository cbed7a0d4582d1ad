package drainer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// nodeWork is what a drain has left to stop on its node, by phase: the
// allocations not yet stopped (desired run, not over on their client).
type nodeWork struct {
	first   []*structs.Allocation // service and batch, and any other that uses volumes
	plugins []*structs.Allocation // CSI plugin tasks
	system  []*structs.Allocation // the other system jobs'
}

// drainNode makes the next step of a node's drain, if one is due, and
// returns the node's deadline while it is ahead (zero otherwise).
func (d *Drainer) drainNode(ws memdb.WatchSet, st *state.StateStore, id string, now time.Time) (time.Time, error) {
	node, err := st.NodeByID(ws, id)
	if err != nil {
		return time.Time{}, err
	}
	if !node.Draining() {
		delete(d.draining, id)
		delete(d.announced, id)
		return time.Time{}, nil
	}
	ds := node.DrainStrategy
	var wake time.Time
	switch {
	case !ds.DeadlinePassed(now):
		wake = ds.ForceDeadline
	case now.Before(ds.ForceDeadline.Add(d.pluginGrace)):
		wake = ds.ForceDeadline.Add(d.pluginGrace) // the plugins' last wait for their claims
	}
	step, events, err := d.nextStep(ws, st, node, now)
	if err != nil || step == nil && len(events) == 0 {
		return wake, err
	}
	if step == nil {
		step = &structs.DrainStep{}
	}
	step.StartedAt = ds.StartedAt
	for _, e := range events {
		e.Subsystem, e.Timestamp = structs.NodeEventSubsystemDrain, now
	}
	req := &structs.NodeUpdateDrainRequest{NodeID: id, Step: step, Events: events, UpdatedAt: now.UnixNano()}
	if err := d.apply(req); err != nil {
		if errors.Is(err, structs.ErrConflict) {
			// The drain was cancelled or replaced since it was read: the
			// write that did so wakes the next pass.
			d.logger.Debug("drain step refused", "node_id", id, "error", err)
			return wake, nil
		}
		return wake, fmt.Errorf("node %s drain step: %w", id, err)
	}
	for _, e := range events {
		d.logger.Info("drain step", "node_id", id, "stopped", len(step.StopAllocs), "complete", step.Complete, "event", e.Message)
	}
	return wake, nil
}

// nextStep decides the node's next step: the allocations to stop and the
// events that say so, or nothing while the drain waits for its clients,
// its claims or its migrations.
func (d *Drainer) nextStep(ws memdb.WatchSet, st *state.StateStore, node *structs.Node, now time.Time) (*structs.DrainStep, []*structs.NodeEvent, error) {
	ds := node.DrainStrategy
	work, err := nodeWorkOf(ws, st, node.ID, ds.IgnoreSystemJobs)
	if err != nil {
		return nil, nil, err
	}
	if ds.DeadlinePassed(now) {
		return d.deadlineStep(ws, st, node, work, now)
	}
	if len(work.first) > 0 {
		chosen, err := d.chooseMigrations(ws, st, work.first)
		if err != nil || len(chosen) == 0 {
			return nil, nil, err // the groups wait for their replacements
		}
		msg := "stopping " + countAllocs(chosen) + " to move " + them(chosen) + " off the node: " + allocList(chosen)
		if n := len(work.first) - len(chosen); n > 0 {
			msg += fmt.Sprintf(" (%d more wait for migrate max_parallel)", n)
		}
		return &structs.DrainStep{StopAllocs: allocIDs(chosen)}, []*structs.NodeEvent{{Message: msg}}, nil
	}
	if len(work.plugins) > 0 {
		claims, err := claimsOnNode(ws, st, node.ID)
		if err != nil {
			return nil, nil, err
		}
		if len(claims) > 0 {
			if d.announced[node.ID].Equal(ds.StartedAt) {
				return nil, nil, nil
			}
			d.announced[node.ID] = ds.StartedAt
			return nil, []*structs.NodeEvent{{Message: fmt.Sprintf("waiting for %d volume claim%s on the node to be released before stopping its CSI plugins: %s",
				len(claims), structs.Plural(len(claims)), strings.Join(claims, ", "))}}, nil
		}
		return &structs.DrainStep{StopAllocs: allocIDs(work.plugins)}, []*structs.NodeEvent{{
			Message: "no volume claim left on the node; stopping " + countAllocs(work.plugins) + " of CSI plugins: " + allocList(work.plugins)}}, nil
	}
	if len(work.system) > 0 {
		return &structs.DrainStep{StopAllocs: allocIDs(work.system)}, []*structs.NodeEvent{{
			Message: "stopping " + countAllocs(work.system) + " of system jobs: " + allocList(work.system)}}, nil
	}
	return &structs.DrainStep{Complete: true}, []*structs.NodeEvent{completeEvent(ds)}, nil
}

// deadlineStep stops, past the deadline, every allocation left but the
// CSI plugins; those go once no claim on the node is left, or once the
// grace (Config.DrainPluginGrace) is over too: a release unmounts through
// the node plugin, so a plugin stopped first leaves its claims stuck until
// the node goes down. The drain completes with the last stop.
func (d *Drainer) deadlineStep(ws memdb.WatchSet, st *state.StateStore, node *structs.Node, work *nodeWork,
	now time.Time) (*structs.DrainStep, []*structs.NodeEvent, error) {
	ds := node.DrainStrategy
	left := append(append([]*structs.Allocation(nil), work.first...), work.system...)
	var events []*structs.NodeEvent
	if len(left) > 0 {
		events = append(events, &structs.NodeEvent{Message: "deadline reached: stopping the " + countAllocs(left) + " left: " + allocList(left)})
	}
	if len(work.plugins) > 0 {
		claims, err := claimsOnNode(ws, st, node.ID)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case len(claims) == 0:
			left = append(left, work.plugins...)
			events = append(events, &structs.NodeEvent{Message: "no volume claim left on the node; stopping " +
				countAllocs(work.plugins) + " of CSI plugins: " + allocList(work.plugins)})
		case now.Before(ds.ForceDeadline.Add(d.pluginGrace)):
			if len(left) > 0 {
				events = append(events, &structs.NodeEvent{Message: fmt.Sprintf("the CSI plugins wait up to %s more for %d volume claim%s on the node to be released: %s",
					d.pluginGrace, len(claims), structs.Plural(len(claims)), strings.Join(claims, ", "))})
			}
			if len(left) == 0 {
				return nil, nil, nil
			}
			return &structs.DrainStep{StopAllocs: allocIDs(left)}, events, nil
		default:
			left = append(left, work.plugins...)
			events = append(events, &structs.NodeEvent{Message: fmt.Sprintf("the grace past the deadline is over: stopping %s of CSI plugins with %d volume claim%s "+
				"not released (%s); they are released once the node goes down, or by hand: berth volume detach VOLUME NODE",
				countAllocs(work.plugins), len(claims), structs.Plural(len(claims)), strings.Join(claims, ", "))})
		}
	}
	events = append(events, completeEvent(ds))
	return &structs.DrainStep{StopAllocs: allocIDs(left), Complete: true}, events, nil
}

func completeEvent(ds *structs.DrainStrategy) *structs.NodeEvent {
	msg := "drain complete: no allocation left to stop; the node stays ineligible until marked eligible (berth node eligibility -enable)"
	if ds.IgnoreSystemJobs {
		msg = "drain complete: only system jobs left, as asked; the node stays ineligible until marked eligible (berth node eligibility -enable)"
	}
	return &structs.NodeEvent{Message: msg}
}

// nodeWorkOf sorts the node's allocations not yet stopped by phase.
// With ignoreSystem, system jobs' allocations are left out.
func nodeWorkOf(ws memdb.WatchSet, st *state.StateStore, nodeID string, ignoreSystem bool) (*nodeWork, error) {
	iter, err := st.AllocsByNode(ws, nodeID)
	if err != nil {
		return nil, err
	}
	w := &nodeWork{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*structs.Allocation)
		if a.TerminalStatus() {
			continue
		}
		system := a.Job != nil && a.Job.Type == structs.JobTypeSystem
		if system && ignoreSystem {
			continue
		}
		tg := a.LookupTaskGroup()
		switch {
		case runsPlugin(tg):
			w.plugins = append(w.plugins, a)
		case system && !usesVolumes(tg):
			w.system = append(w.system, a)
		default:
			w.first = append(w.first, a)
		}
	}
	for _, list := range [][]*structs.Allocation{w.first, w.plugins, w.system} {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Name != list[j].Name {
				return list[i].Name < list[j].Name
			}
			return list[i].ID < list[j].ID
		})
	}
	return w, nil
}

func runsPlugin(tg *structs.TaskGroup) bool {
	if tg == nil {
		return false
	}
	for _, t := range tg.Tasks {
		if t != nil && t.CSIPluginConfig != nil {
			return true
		}
	}
	return false
}

func usesVolumes(tg *structs.TaskGroup) bool {
	if tg == nil {
		return false
	}
	for _, v := range tg.Volumes {
		if v != nil && v.Type == "csi" {
			return true
		}
	}
	return false
}

// claimsOnNode lists the claims, not freed, that allocations hold on
// the node's volumes ("volume (alloc, state)"): a freed claim is gone.
func claimsOnNode(ws memdb.WatchSet, st *state.StateStore, nodeID string) ([]string, error) {
	iter, err := st.CSIVolumesByNodeID(ws, nodeID)
	if err != nil {
		return nil, err
	}
	var out []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		vol := raw.(*structs.CSIVolume)
		for _, m := range []map[string]*structs.CSIVolumeClaim{vol.ReadClaims, vol.WriteClaims, vol.PastClaims} {
			for allocID, c := range m {
				if c != nil && c.NodeID == nodeID && c.State != structs.CSIVolumeClaimStateFreed {
					out = append(out, fmt.Sprintf("%s (alloc %s, %s)", vol.ID, structs.ShortID(allocID), c.State))
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func allocIDs(allocs []*structs.Allocation) []string {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = a.ID
	}
	return ids
}

// allocList names allocations for an event: the first few, and how many
// more.
func allocList(allocs []*structs.Allocation) string {
	const shown = 5
	var names []string
	for i, a := range allocs {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(allocs)-shown))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", a.Name, structs.ShortID(a.ID)))
	}
	return strings.Join(names, ", ")
}

func countAllocs(allocs []*structs.Allocation) string {
	return fmt.Sprintf("%d allocation%s", len(allocs), structs.Plural(len(allocs)))
}

func them(allocs []*structs.Allocation) string {
	if len(allocs) == 1 {
		return "it"
	}
	return "them"
}
