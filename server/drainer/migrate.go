package drainer

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// groupKey names a job's group.
type groupKey struct{ namespace, job, group string }

// chooseMigrations picks, among a node's allocations of the first phase,
// those to stop now: for each group, as many as its migrate {
// max_parallel } leaves room for beside the migrations already in flight
// (see inFlight). An allocation whose job is gone or stopped, or whose
// group is gone, or a system job's, has no replacement to wait for: it
// is stopped now.
func (d *Drainer) chooseMigrations(ws memdb.WatchSet, st *state.StateStore, allocs []*structs.Allocation) ([]*structs.Allocation, error) {
	byGroup := map[groupKey][]*structs.Allocation{}
	var order []groupKey
	for _, a := range allocs {
		k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
		if byGroup[k] == nil {
			order = append(order, k)
		}
		byGroup[k] = append(byGroup[k], a)
	}
	nodes := map[string]*structs.Node{} // the nodes inFlight read, this call
	var chosen []*structs.Allocation
	for _, k := range order {
		job, err := st.JobByID(ws, k.namespace, k.job)
		if err != nil {
			return nil, err
		}
		tg := job.LookupTaskGroup(k.group)
		if job == nil || job.Stop || tg == nil || job.Type == structs.JobTypeSystem {
			chosen = append(chosen, byGroup[k]...)
			continue
		}
		busy, err := inFlight(ws, st, job, tg, nodes)
		if err != nil {
			return nil, err
		}
		room := tg.MigrateMaxParallel() - busy
		for _, a := range byGroup[k] {
			if room <= 0 {
				break
			}
			chosen = append(chosen, a)
			room--
		}
	}
	return chosen, nil
}

// inFlight counts the group's migrations under way: its allocations
// stopped on a draining node since that node's drain began whose
// replacement is not running yet. A replacement is a newer allocation of
// the same name that the servers want running and whose client runs it
// (or ran it to completion). An allocation whose index the group's count
// no longer reaches is not replaced, so it does not count.
func inFlight(ws memdb.WatchSet, st *state.StateStore, job *structs.Job, tg *structs.TaskGroup, nodes map[string]*structs.Node) (int, error) {
	iter, err := st.AllocsByJob(ws, job.Namespace, job.ID)
	if err != nil {
		return 0, err
	}
	var group []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); a.TaskGroup == tg.Name {
			group = append(group, a)
		}
	}
	busy := 0
	for _, a := range group {
		if a.DesiredStatus != structs.AllocDesiredStatusStop {
			continue
		}
		if i, ok := structs.AllocIndex(a.Name); ok && i >= tg.Count {
			continue
		}
		n, ok := nodes[a.NodeID]
		if !ok {
			if n, err = st.NodeByID(nil, a.NodeID); err != nil {
				return 0, err
			}
			nodes[a.NodeID] = n
		}
		// Stopped by this drain: by a drain of its node (only a drain
		// step of the node stops an allocation for this reason), since
		// this one began.
		byDrain := a.StopReason == structs.AllocStopDrain
		if !n.Draining() || !byDrain || a.ModifyIndex < n.DrainStrategy.StartIndex || replaced(a, group) {
			continue
		}
		busy++
	}
	return busy, nil
}

// replaced reports whether a newer allocation of a's name runs (or ran to
// completion) where the servers want it running.
func replaced(a *structs.Allocation, group []*structs.Allocation) bool {
	for _, b := range group {
		if b.Name != a.Name || b.CreateIndex <= a.CreateIndex || b.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		if b.ClientStatus == structs.AllocClientStatusRunning || b.ClientStatus == structs.AllocClientStatusComplete {
			return true
		}
	}
	return false
}
