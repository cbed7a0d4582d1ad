package scheduler

import (
	"context"
	"fmt"
	"sort"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// watchedTables are the tables whose writes may let a job place more.
var watchedTables = []string{state.TableNodes, state.TableJobs, state.TableAllocs, state.TableCSIPlugins, state.TableCSIVolumes}

// pass re-plans the jobs that what was written since the last pass may
// let place more, or every job when full, and returns them in the order
// it planned them. It adds to ws the tables it watches and the store's
// abandon channel, so that the next write to any of them wakes Run.
//
// What may let a job place more, and so which jobs are re-planned:
//   - the job was written (registered again: a user's run placed what it
//     could, and the job waits if some did not fit);
//   - an allocation of the job stopped holding its place: it was stopped
//     or lost with its node, or its tasks are over on its client;
//   - a node became ready or changed while ready: every system job (one
//     allocation per node), placing on those nodes only (PlanNodes), and
//     every waiting job;
//   - a plugin or a volume was written (a claim freed, a volume
//     registered, a plugin healthy): every waiting job. A volume frees
//     room on a node under its plugin's max volumes too, so this is not
//     narrowed to the jobs that name the volume.
//
// A job is waiting when its last plan left allocations unplaced. Every
// write is either read by a pass or fires a watch it registered: the
// reads happen after the watches are taken, and the next pass reads from
// the index read before them.
func (w *JobWatcher) pass(ctx context.Context, ws memdb.WatchSet, full bool) ([]jobKey, error) {
	st := w.cfg.State()
	ws.Add(st.AbandonCh())
	if st != w.store {
		full = true
	}
	upTo, err := st.LatestIndex()
	if err != nil {
		return nil, err
	}
	moved := map[string]bool{} // table -> written since the last pass
	for _, table := range watchedTables {
		index, err := st.IndexWatch(ws, table)
		if err != nil {
			return nil, err
		}
		moved[table] = index > w.last
	}
	var todo map[jobKey]bool
	var scopes map[jobKey][]string
	if full {
		todo, err = w.everyJob(st)
	} else {
		todo, scopes, err = w.changedJobs(st, moved)
	}
	if err != nil {
		return nil, err
	}
	keys := make([]jobKey, 0, len(todo))
	for k := range todo {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	for i, k := range keys {
		if ctx.Err() != nil {
			return keys[:i], nil
		}
		w.replan(k, scopes[k])
	}
	w.store, w.last = st, upTo
	return keys, nil
}

// everyJob lists the jobs not stopped, rebuilds the set of system jobs
// and forgets the waiting jobs that are gone.
func (w *JobWatcher) everyJob(st *state.StateStore) (map[jobKey]bool, error) {
	iter, err := st.Jobs(nil)
	if err != nil {
		return nil, err
	}
	todo := map[jobKey]bool{}
	w.system = map[jobKey]bool{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); !j.Stop {
			todo[w.noteJob(j)] = true
		}
	}
	for k := range w.waiting {
		if !todo[k] {
			delete(w.waiting, k) // purged or stopped
		}
	}
	for k := range w.updating {
		if !todo[k] {
			delete(w.updating, k)
		}
	}
	for k := range w.failed {
		if !todo[k] {
			delete(w.failed, k)
		}
	}
	return todo, nil
}

// changedJobs lists the jobs the writes since the last pass concern (see
// pass), from the tables that moved. A job in scopes is planned on those
// nodes only: a system job that only nodes becoming ready concern.
func (w *JobWatcher) changedJobs(st *state.StateStore, moved map[string]bool) (todo map[jobKey]bool, scopes map[jobKey][]string, err error) {
	todo, scopes = map[jobKey]bool{}, map[jobKey][]string{}
	if moved[state.TableJobs] {
		iter, err := st.JobsModifiedAfter(nil, w.last)
		if err != nil {
			return nil, nil, err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			todo[w.noteJob(raw.(*structs.Job))] = true
		}
	}
	if moved[state.TableAllocs] {
		iter, err := st.AllocsModifiedAfter(nil, w.last)
		if err != nil {
			return nil, nil, err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			a := raw.(*structs.Allocation)
			k := jobKey{a.Namespace, a.JobID}
			if _, updating := w.updating[k]; updating || a.TerminalStatus() {
				todo[k] = true // an update's replacement that runs may let the next one go
			}
		}
	}
	var ready []string // nodes written since the last pass that can take allocations
	if moved[state.TableNodes] {
		iter, err := st.NodesModifiedAfter(nil, w.last)
		if err != nil {
			return nil, nil, err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if n := raw.(*structs.Node); n.Schedulable() {
				ready = append(ready, n.ID)
			}
		}
	}
	if len(ready) > 0 {
		sort.Strings(ready)
		for k := range w.system {
			if !todo[k] {
				todo[k], scopes[k] = true, ready
			}
		}
	}
	whole := func(k jobKey) { todo[k] = true; delete(scopes, k) }
	if len(ready) > 0 || moved[state.TableCSIPlugins] || moved[state.TableCSIVolumes] {
		for k := range w.waiting {
			whole(k)
		}
	}
	now := w.cfg.Clock.Now()
	for k, at := range w.updating {
		if !at.IsZero() && !now.Before(at) {
			whole(k)
		}
	}
	return todo, scopes, nil
}

// noteJob keeps the set of system jobs up to date with a job read, and
// returns its key.
func (w *JobWatcher) noteJob(j *structs.Job) jobKey {
	k := jobKey{j.Namespace, j.ID}
	if j.Type == structs.JobTypeSystem && !j.Stop {
		w.system[k] = true
	} else {
		delete(w.system, k)
	}
	return k
}

// replan places the job's missing allocations that fit now (on the nodes
// of scope only, when given), and records whether some still do not. A
// job gone, stopped or over the count limit is forgotten; one whose plan
// could not be made or written stays waiting, for the next change or the
// idle pass.
func (w *JobWatcher) replan(k jobKey, scope []string) {
	w.cfg.PlanLock.Lock()
	defer w.cfg.PlanLock.Unlock()
	log := w.logger.With("job_id", k.ID, "namespace", k.Namespace)
	st := w.cfg.State()
	job, err := st.JobByID(nil, k.Namespace, k.ID)
	if err != nil {
		log.Error("read job", "error", err)
		w.waiting[k] = true
		return
	}
	if job == nil || job.Stop {
		delete(w.waiting, k)
		delete(w.system, k)
		delete(w.updating, k)
		delete(w.failed, k)
		return
	}
	if err := job.ValidateCount(w.cfg.JobMaxCount); err != nil {
		log.Debug("job is over the count limit; not placing it", "error", err)
		delete(w.waiting, k)
		delete(w.system, k)
		return
	}
	var res *Result
	if scope != nil && job.Type == structs.JobTypeSystem {
		res, err = w.planner.PlanNodes(st, job, scope)
	} else {
		res, err = w.planner.Plan(st, job, Auto)
	}
	if err == nil && (len(res.Plan.Allocs) > 0 || len(res.Plan.Stops) > 0) {
		err = w.cfg.Apply(res.Plan)
	}
	if err != nil {
		log.Error("place job", "error", err)
		w.waiting[k] = true
		return
	}
	for _, a := range res.Plan.Allocs {
		if a.PreviousAllocation != "" {
			log.Info("rescheduled failed allocation", "alloc_id", a.ID, "node_id", a.NodeID, "name", a.Name,
				"previous_alloc_id", a.PreviousAllocation, "reschedules", len(a.RescheduleEvents))
			continue
		}
		log.Info("placed allocation", "alloc_id", a.ID, "node_id", a.NodeID, "name", a.Name)
	}
	for _, s := range res.Plan.Stops {
		log.Info("stopped allocation", "alloc_id", s.AllocID, "why", s.Description)
	}
	w.noteUpdate(k, res)
	if len(res.Failures) > 0 {
		w.waiting[k] = true
	} else {
		delete(w.waiting, k)
	}
}

// noteUpdate keeps the set of updating jobs up to date with a plan's
// result, logging an update that stopped.
func (w *JobWatcher) noteUpdate(k jobKey, res *Result) {
	failed := ""
	for _, g := range res.Groups {
		if g.UpdateFailed != "" {
			failed = fmt.Sprintf("group %q: %s", g.TaskGroup, g.UpdateFailed)
		}
	}
	if failed != "" && w.failed[k] != failed {
		w.logger.Warn("rolling update stopped; run the job again or revert it", "job_id", k.ID,
			"namespace", k.Namespace, "why", failed)
	}
	w.failed[k] = failed
	if res.NextCheck.IsZero() && (failed != "" || !res.Updating) {
		delete(w.updating, k) // nothing will move by itself
		return
	}
	// A failed replacement's reschedule, too, is looked at when its
	// delay is over.
	w.updating[k] = res.NextCheck
}
