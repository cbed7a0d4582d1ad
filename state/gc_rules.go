package state

import (
	"cmp"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// What garbage collection may remove. The same rules serve the leader,
// which lists the rows (GCCandidates), and the FSM, which deletes those of
// the listed rows that the rules still allow at the apply (ApplyGC):
//
//   - An allocation goes once its tasks are over on its client (complete,
//     failed or lost: a desired stop alone is not enough, the tasks may
//     still run) and it holds no claim, on any volume, that is not freed.
//     Besides, it must be old enough (unless its job was purged), and it
//     must not hold its place in a job that still runs: the newest
//     allocation of its name stays, unless it was asked to stop and goes
//     with every older one of its name, so that the scheduler never sees a
//     stale allocation as the one that holds the place.
//   - A stopped job goes, once old enough, with the last of its
//     allocations. A batch job whose every allocation completed goes, with
//     all of its allocations at once (never them alone: the scheduler would
//     run it again).
//   - A node goes once it has been down for long enough, runs nothing whose
//     tasks may still run, and no claim that is not freed names it.
//   - A past claim goes once it is freed (releasing it removes it; one left
//     freed in a past claims map is removed here).

// gcJudge judges rows in one transaction against cutoffs.
type gcJudge struct {
	txn *memdb.Txn
	cut structs.GCCutoffs
	// listed holds the rows a request names; nil allows every row (the
	// leader's listing).
	listed *gcListed
}

// gcListed is the set of rows a GC request names.
type gcListed struct {
	allocs map[string]bool
	jobs   map[structs.GCJobKey]bool
}

func (g *gcJudge) allocListed(id string) bool { return g.listed == nil || g.listed.allocs[id] }

func (g *gcJudge) jobListed(ns, id string) bool {
	return g.listed == nil || g.listed.jobs[structs.GCJobKey{Namespace: ns, ID: id}]
}

// jobVerdict is what garbage collection may remove of one job: some of its
// allocations, and the job row itself when job is set.
type jobVerdict struct {
	key    structs.GCJobKey
	allocs []*structs.Allocation
	job    *structs.Job
}

// judgeJob judges a job (which may be gone: purged) and its allocations.
func (g *gcJudge) judgeJob(ns, id string) (*jobVerdict, error) {
	job, err := jobByIDTxn(g.txn, nil, ns, id)
	if err != nil {
		return nil, err
	}
	allocs, err := allocsTxn(g.txn, indexJob, ns, id)
	if err != nil {
		return nil, err
	}
	v := &jobVerdict{key: structs.GCJobKey{Namespace: ns, ID: id}}
	// over: the allocation's tasks are over and it holds no live claim.
	over := func(a *structs.Allocation) (bool, error) {
		if !a.ClientTerminalStatus() || !g.allocListed(a.ID) {
			return false, nil
		}
		held, err := holdsClaimTxn(g.txn, a.ID)
		return !held, err
	}
	old := func(a *structs.Allocation) bool { return a.ModifyIndex <= g.cut.Alloc }

	switch {
	case job == nil:
		// Purged: its allocations go as soon as they are over.
		for _, a := range allocs {
			ok, err := over(a)
			if err != nil {
				return nil, err
			}
			if ok {
				v.allocs = append(v.allocs, a)
			}
		}
	case job.Stop:
		for _, a := range allocs {
			ok, err := over(a)
			if err != nil {
				return nil, err
			}
			if ok && old(a) {
				v.allocs = append(v.allocs, a)
			}
		}
		if len(v.allocs) == len(allocs) && job.ModifyIndex <= g.cut.Job && g.jobListed(ns, id) {
			v.job = job
		}
	case batchDone(job, allocs):
		if job.ModifyIndex > g.cut.Job || !g.jobListed(ns, id) {
			return v, nil
		}
		for _, a := range allocs {
			ok, err := over(a)
			if err != nil || !ok || !old(a) || a.ModifyIndex > g.cut.Job {
				return &jobVerdict{key: v.key}, err
			}
		}
		v.allocs, v.job = allocs, job
	default:
		cand := map[string]bool{}
		for _, a := range allocs {
			ok, err := over(a)
			if err != nil {
				return nil, err
			}
			if ok && old(a) {
				cand[a.ID] = true
			}
		}
		v.allocs = outOfPlace(allocs, cand)
	}
	return v, nil
}

// outOfPlace returns the allocations among cand that hold no place in a
// running job: per name, every one older than the newest, and the newest
// when it was asked to stop and every older one goes too.
func outOfPlace(allocs []*structs.Allocation, cand map[string]bool) []*structs.Allocation {
	byName := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byName[a.Name] = append(byName[a.Name], a)
	}
	var out []*structs.Allocation
	for _, name := range sortedKeys(byName) {
		group := byName[name]
		slices.SortFunc(group, func(x, y *structs.Allocation) int {
			return cmp.Or(cmp.Compare(x.CreateIndex, y.CreateIndex), cmp.Compare(x.ID, y.ID))
		})
		newest := group[len(group)-1]
		allOlder := true
		for _, a := range group[:len(group)-1] {
			if cand[a.ID] {
				out = append(out, a)
			} else {
				allOlder = false
			}
		}
		if cand[newest.ID] && allOlder && newest.DesiredStatus == structs.AllocDesiredStatusStop {
			out = append(out, newest)
		}
	}
	return out
}

// batchDone reports whether job is a batch job that has done its work:
// for every index of every group, the newest allocation completed.
func batchDone(job *structs.Job, allocs []*structs.Allocation) bool {
	if job.Type != structs.JobTypeBatch {
		return false
	}
	type slot struct {
		group string
		idx   int
	}
	newest := map[slot]*structs.Allocation{}
	for _, a := range allocs {
		idx, ok := structs.AllocIndex(a.Name)
		if !ok {
			continue
		}
		k := slot{a.TaskGroup, idx}
		if n := newest[k]; n == nil || a.CreateIndex > n.CreateIndex {
			newest[k] = a
		}
	}
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for i := 0; i < tg.Count; i++ {
			a := newest[slot{tg.Name, i}]
			if a == nil || a.ClientStatus != structs.AllocClientStatusComplete {
				return false
			}
		}
	}
	return true
}

// holdsClaimTxn reports whether an allocation holds a claim that is not
// freed on any volume, in any namespace.
func holdsClaimTxn(txn *memdb.Txn, allocID string) (bool, error) {
	iter, err := txn.Get(TableCSIVolumes, indexClaimAlloc, allocID)
	if err != nil {
		return false, errInternal("volumes claimed by alloc "+allocID, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if c := raw.(*structs.CSIVolume).HeldClaim(allocID); c != nil && c.State != structs.CSIVolumeClaimStateFreed {
			return true, nil
		}
	}
	return false, nil
}

// judgeNode returns the node if garbage collection may remove it, or nil.
func (g *gcJudge) judgeNode(id string) (*structs.Node, error) {
	n, err := nodeByIDTxn(g.txn, nil, id)
	if err != nil || n == nil || n.Status != structs.NodeStatusDown || n.ModifyIndex > g.cut.Node {
		return nil, err
	}
	allocs, err := allocsTxn(g.txn, indexNodeID, id)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			return nil, nil
		}
	}
	iter, err := g.txn.Get(TableCSIVolumes, indexClaimNode, id)
	if err != nil {
		return nil, errInternal("volumes claimed on node "+id, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		for _, m := range claimMaps(raw.(*structs.CSIVolume)) {
			for _, c := range m {
				if c != nil && c.NodeID == id && c.State != structs.CSIVolumeClaimStateFreed {
					return nil, nil
				}
			}
		}
	}
	return n, nil
}

// freedPastClaims lists the allocation IDs of a volume's past claims that
// are freed, sorted.
func freedPastClaims(vol *structs.CSIVolume) []string {
	var ids []string
	for id, c := range vol.PastClaims {
		if c != nil && c.State == structs.CSIVolumeClaimStateFreed {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
