package state

import (
	"cmp"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// Garbage collection: the leader lists what the rules (gc_rules.go) allow
// removing, in batches (GCCandidates), and each batch goes through raft as
// one GCRequest, which the FSM applies with ApplyGC: it deletes a listed
// row only if the rules still allow it against the store as it is then.

// ApplyGC deletes, in one transaction, the rows req lists that the rules
// allow under req.Cutoffs now, and counts them. A row that is gone, was
// written since the leader listed it, or took a claim since, is kept;
// that is not an error.
func (s *StateStore) ApplyGC(index uint64, req *structs.GCRequest) (*structs.GCResult, error) {
	if req == nil {
		return nil, errBadRequest("gc: the request is empty")
	}
	txn := s.writeTxn(index)
	defer txn.Abort()

	g := &gcJudge{txn: txn, cut: req.Cutoffs, listed: &gcListed{allocs: map[string]bool{}, jobs: map[structs.GCJobKey]bool{}}}
	keys := map[structs.GCJobKey]bool{}
	for _, k := range req.Jobs {
		k.Namespace = nsOrDefault(k.Namespace)
		g.listed.jobs[k] = true
		keys[k] = true
	}
	for _, id := range req.Allocs {
		g.listed.allocs[id] = true
		a, err := allocByIDTxn(txn, nil, id)
		if err != nil {
			return nil, err
		}
		if a != nil {
			keys[structs.GCJobKey{Namespace: nsOrDefault(a.Namespace), ID: a.JobID}] = true
		}
	}

	// Judge every job before deleting anything: a verdict reads its
	// job's allocations as they are.
	var verdicts []*jobVerdict
	for _, k := range sortedJobKeys(keys) {
		v, err := g.judgeJob(k.Namespace, k.ID)
		if err != nil {
			return nil, err
		}
		verdicts = append(verdicts, v)
	}
	res := &structs.GCResult{}
	changed := map[string]bool{}
	for _, v := range verdicts {
		if err := deleteVerdictTxn(txn, index, v, res, changed); err != nil {
			return nil, err
		}
	}
	for _, id := range dedupe(req.Nodes) {
		n, err := g.judgeNode(id)
		if err != nil {
			return nil, err
		}
		if n == nil {
			continue
		}
		if err := txn.Delete(TableNodes, n); err != nil {
			return nil, errInternal("delete node "+id, err)
		}
		plugins, err := updateNodePlugins(txn, index, id, n, nil)
		if err != nil {
			return nil, err
		}
		res.Nodes++
		changed[TableNodes] = true
		changed[TableCSIPlugins] = changed[TableCSIPlugins] || plugins
	}
	n, err := deleteFreedClaimsTxn(txn, index, req.Claims)
	if err != nil {
		return nil, err
	}
	res.PastClaims = n
	changed[TableCSIVolumes] = n > 0

	var tables []string
	for _, t := range sortedKeys(changed) {
		if changed[t] {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return res, nil
	}
	if err := bumpIndexes(txn, index, tables...); err != nil {
		return nil, err
	}
	txn.Commit()
	return res, nil
}

// deleteVerdictTxn deletes what a verdict allows, counting it in res and
// marking the tables it changed.
func deleteVerdictTxn(txn *memdb.Txn, index uint64, v *jobVerdict, res *structs.GCResult, changed map[string]bool) error {
	for _, a := range v.allocs {
		if err := txn.Delete(TableAllocs, a); err != nil {
			return errInternal("delete alloc "+a.ID, err)
		}
		res.Allocs++
		changed[TableAllocs] = true
	}
	if v.job == nil {
		return nil
	}
	if err := txn.Delete(TableJobs, v.job); err != nil {
		return errInternal("delete job "+v.job.ID, err)
	}
	// Its kept versions go with it, as with a purge.
	if err := deleteJobVersionsTxn(txn, index, v.job.Namespace, v.job.ID); err != nil {
		return err
	}
	res.Jobs++
	changed[TableJobs] = true
	for _, id := range v.job.CSIPluginIDs() {
		d, err := deletePluginIfUnused(txn, id)
		if err != nil {
			return err
		}
		changed[TableCSIPlugins] = changed[TableCSIPlugins] || d
	}
	return nil
}

// deleteFreedClaimsTxn removes the listed past claims that are freed and
// returns how many.
func deleteFreedClaimsTxn(txn *memdb.Txn, index uint64, claims []structs.GCClaimKey) (int, error) {
	type volKey struct{ ns, id string }
	var order []volKey
	byVolume := map[volKey][]string{} // volume -> alloc IDs
	for _, c := range claims {
		k := volKey{nsOrDefault(c.Namespace), c.VolumeID}
		if _, ok := byVolume[k]; !ok {
			order = append(order, k)
		}
		byVolume[k] = append(byVolume[k], c.AllocID)
	}
	removed := 0
	for _, k := range order {
		vol, err := volumeByIDTxn(txn, nil, k.ns, k.id)
		if err != nil {
			return 0, err
		}
		if vol == nil {
			continue
		}
		var next *structs.CSIVolume
		for _, allocID := range byVolume[k] {
			if c := vol.PastClaims[allocID]; c == nil || c.State != structs.CSIVolumeClaimStateFreed {
				continue
			}
			if next == nil {
				next = vol.Copy()
			}
			if _, ok := next.PastClaims[allocID]; ok {
				delete(next.PastClaims, allocID)
				removed++
			}
		}
		if next == nil {
			continue
		}
		if !next.InUse() {
			next.AccessMode = structs.CSIVolumeAccessModeUnknown
			next.AttachmentMode = structs.CSIVolumeAttachmentModeUnknown
		}
		next.ModifyIndex = index
		if err := insertVolume(txn, next); err != nil {
			return 0, err
		}
	}
	return removed, nil
}

// purgeAllocsTxn deletes the allocations of a job purged in txn that are
// over on their client and hold no claim that is not freed; garbage
// collection removes the others once they are. The caller bumps the
// allocs index.
func purgeAllocsTxn(txn *memdb.Txn, index uint64, namespace, id string) error {
	g := &gcJudge{txn: txn}
	v, err := g.judgeJob(namespace, id)
	if err != nil {
		return err
	}
	return deleteVerdictTxn(txn, index, v, &structs.GCResult{}, map[string]bool{})
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}

// sortedJobKeys returns the keys of a map by (namespace, ID).
func sortedJobKeys[V any](m map[structs.GCJobKey]V) []structs.GCJobKey {
	keys := make([]structs.GCJobKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b structs.GCJobKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.ID, b.ID))
	})
	return keys
}

// dedupe returns ids without repeats, in their first order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
