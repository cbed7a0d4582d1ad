package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// GCCandidates lists, in batches of about maxRows rows, what garbage
// collection may remove under cut now. A job's rows are never split
// between batches (a job with more than maxRows rows is a batch of its
// own), so that each batch is judged whole.
func (s *StateStore) GCCandidates(cut structs.GCCutoffs, maxRows int) ([]*structs.GCRequest, error) {
	txn := s.db.Txn(false)
	g := &gcJudge{txn: txn, cut: cut}
	b := &gcBatches{cut: cut, max: max(maxRows, 1)}

	keys, err := gcJobKeysTxn(txn)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedJobKeys(keys) {
		v, err := g.judgeJob(k.Namespace, k.ID)
		if err != nil {
			return nil, err
		}
		b.addVerdict(v)
	}
	iter, err := txn.Get(TableNodes, indexID)
	if err != nil {
		return nil, errInternal("read nodes", err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n, err := g.judgeNode(raw.(*structs.Node).ID)
		if err != nil {
			return nil, err
		}
		if n != nil {
			b.room(1).Nodes = append(b.room(1).Nodes, n.ID)
		}
	}
	vols, err := txn.Get(TableCSIVolumes, indexReleasing, releasingKey)
	if err != nil {
		return nil, errInternal("read volumes releasing claims", err)
	}
	for raw := vols.Next(); raw != nil; raw = vols.Next() {
		vol := raw.(*structs.CSIVolume)
		for _, allocID := range freedPastClaims(vol) {
			r := b.room(1)
			r.Claims = append(r.Claims, structs.GCClaimKey{Namespace: vol.Namespace, VolumeID: vol.ID, AllocID: allocID})
		}
	}
	return b.out, nil
}

// gcJobKeysTxn lists the jobs garbage collection may concern: those
// stopped or batch, and those of every allocation over on its client
// (whose job may be gone).
func gcJobKeysTxn(txn *memdb.Txn) (map[structs.GCJobKey]bool, error) {
	keys := map[structs.GCJobKey]bool{}
	jobs, err := txn.Get(TableJobs, indexID)
	if err != nil {
		return nil, errInternal("read jobs", err)
	}
	for raw := jobs.Next(); raw != nil; raw = jobs.Next() {
		if j := raw.(*structs.Job); j.Stop || j.Type == structs.JobTypeBatch {
			keys[structs.GCJobKey{Namespace: j.Namespace, ID: j.ID}] = true
		}
	}
	allocs, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return nil, errInternal("read allocs", err)
	}
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		if a := raw.(*structs.Allocation); a.ClientTerminalStatus() {
			keys[structs.GCJobKey{Namespace: nsOrDefault(a.Namespace), ID: a.JobID}] = true
		}
	}
	return keys, nil
}

// gcBatches packs rows into requests of about max rows.
type gcBatches struct {
	cut structs.GCCutoffs
	max int
	out []*structs.GCRequest
}

// room returns the batch to add n rows to: the last one, or a new one
// when the last would pass max (an empty batch takes any n).
func (b *gcBatches) room(n int) *structs.GCRequest {
	if len(b.out) == 0 || (b.out[len(b.out)-1].Rows() > 0 && b.out[len(b.out)-1].Rows()+n > b.max) {
		b.out = append(b.out, &structs.GCRequest{Cutoffs: b.cut})
	}
	return b.out[len(b.out)-1]
}

// addVerdict adds a job's rows, all to one batch.
func (b *gcBatches) addVerdict(v *jobVerdict) {
	n := len(v.allocs)
	if v.job != nil {
		n++
	}
	if n == 0 {
		return
	}
	r := b.room(n)
	for _, a := range v.allocs {
		r.Allocs = append(r.Allocs, a.ID)
	}
	if v.job != nil {
		r.Jobs = append(r.Jobs, v.key)
	}
}
