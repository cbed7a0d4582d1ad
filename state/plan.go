package state

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// ApplyPlan writes a scheduler's placement in one transaction: the job,
// when given, the new allocations, and the claims they reserve. All or
// nothing: a claim that cannot be taken fails the whole plan, so two
// placements never share a single-writer volume.
func (s *StateStore) ApplyPlan(index uint64, req *structs.PlanApplyRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	tables := []string{}
	var job *structs.Job // as stored, with its version
	if req.Job == nil && req.JobID != "" {
		ns := req.RequestNamespace()
		var err error
		job, err = jobByIDTxn(txn, nil, ns, req.JobID)
		if err != nil {
			return err
		}
		if job == nil || job.Stop || job.ModifyIndex != req.JobModifyIndex {
			return errConflict("plan for job %q: the job changed, stopped or was removed since it was planned; nothing was placed", req.JobID)
		}
	}
	if req.Job != nil {
		plugins, err := upsertJobTxn(txn, index, req.Job)
		if err != nil {
			return err
		}
		if err := finishJobWrite(txn, index, plugins); err != nil {
			return err
		}
		if job, err = jobByIDTxn(txn, nil, req.Job.Namespace, req.Job.ID); err != nil {
			return err
		}
	}
	if err := applyPlanStopsTxn(txn, index, job, req); err != nil {
		return err
	}
	for _, alloc := range req.Allocs {
		if alloc == nil || alloc.ID == "" {
			return errBadRequest("plan: an allocation without an ID")
		}
		bare := *alloc
		bare.Job = nil
		a := bare.Copy()
		if a.Namespace == "" {
			a.Namespace = structs.DefaultNamespace
		}
		if job != nil {
			// The job as stored, with the version the FSM numbered:
			// rows are never changed in place, so every allocation of
			// the plan shares it (PlanApplyRequest.ForRaft sends none).
			a.Job, a.JobVersion = job, job.Version
		} else {
			a.Job = alloc.Job.Copy()
		}
		a.CreateTime = req.Timestamp
		a.Timeline = a.Timeline.Stamp(structs.StepPlaced, time.Unix(0, req.Timestamp))
		a.CreateIndex, a.ModifyIndex = index, index
		if err := txn.Insert(TableAllocs, a); err != nil {
			return errInternal("insert alloc "+a.ID, err)
		}
	}
	if len(req.Allocs) > 0 {
		tables = append(tables, TableAllocs)
	}
	for i := range req.Claims {
		c := req.Claims[i] // a copy: the request is not written to
		if c.Timestamp.IsZero() && req.Timestamp != 0 {
			c.Timestamp = time.Unix(0, req.Timestamp) // the plan's time stamps its claims
		}
		if c.State != structs.CSIVolumeClaimStateTaken {
			return errBadRequest("plan: claim of alloc %s on volume %q must be taken, not %s", c.AllocationID, c.VolumeID, c.State)
		}
		if _, err := applyClaim(txn, index, &c); err != nil {
			return err
		}
	}
	if len(req.Claims) > 0 {
		tables = append(tables, TableCSIVolumes)
	}
	if err := bumpIndexes(txn, index, tables...); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// applyPlanStopsTxn stops the allocations the plan stops: each must be
// one of the plan's job. Their claims are released once their clients
// report them over, as for any stop.
func applyPlanStopsTxn(txn *memdb.Txn, index uint64, job *structs.Job, req *structs.PlanApplyRequest) error {
	if len(req.Stops) == 0 {
		return nil
	}
	if job == nil {
		return errBadRequest("plan: stops allocations but names no job")
	}
	var stopped []*structs.Allocation
	for _, st := range req.Stops {
		existing, err := allocByIDTxn(txn, nil, st.AllocID)
		if err != nil {
			return err
		}
		if existing == nil || existing.Namespace != job.Namespace || existing.JobID != job.ID {
			return errConflict("plan for job %q: allocation %s to stop is not the job's any more; nothing was written", job.ID, st.AllocID)
		}
		// A plan written before stops carried a reason says it in words.
		changed, err := stopAllocsTxn(txn, index, []*structs.Allocation{existing}, false, st.Legacy(), time.Unix(0, req.Timestamp))
		if err != nil {
			return err
		}
		stopped = append(stopped, changed...)
	}
	return finishAllocWrite(txn, index, stopped, time.Unix(0, req.Timestamp))
}
