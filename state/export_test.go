package state

import (
	"time"

	"github.com/berth-csi/berth/structs"
)

// The writes below are for state's own tests, which set up allocations
// and jobs in states that are tedious to reach otherwise. Production
// writes jobs and allocations only through ApplyPlan, StopJob and
// UpdateAllocsFromClient (the raft messages PlanApply, JobDeregister and
// AllocClientUpdate); these are compiled into tests of this package alone.

// UpsertAllocs stores allocations, defaulting their namespace and keeping
// the CreateIndex of a version they replace. All or nothing. A terminal
// allocation starts releasing its claims in the same write.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	written := make([]*structs.Allocation, 0, len(allocs))
	for i, alloc := range allocs {
		if alloc == nil || alloc.ID == "" {
			return errBadRequest("alloc %d of %d: missing id", i+1, len(allocs))
		}
		a := alloc.Copy()
		if a.Namespace == "" {
			a.Namespace = structs.DefaultNamespace
		}
		existing, err := allocByIDTxn(txn, nil, a.ID)
		if err != nil {
			return err
		}
		a.CreateIndex = index
		if existing != nil {
			a.CreateIndex = existing.CreateIndex
		}
		a.ModifyIndex = index
		if err := txn.Insert(TableAllocs, a); err != nil {
			return errInternal("insert alloc "+a.ID, err)
		}
		written = append(written, a)
	}
	if err := finishAllocWrite(txn, index, written, time.Time{}); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpsertJob stores a job, defaulting its namespace and keeping the
// CreateIndex of the version it replaces. A plugin row that the job stopped
// running, and that has no instance and no other running job, is deleted.
func (s *StateStore) UpsertJob(index uint64, job *structs.Job) error {
	if job == nil || job.ID == "" {
		return errBadRequest("job: missing id")
	}

	txn := s.writeTxn(index)
	defer txn.Abort()

	plugins, err := upsertJobTxn(txn, index, job)
	if err != nil {
		return err
	}
	if err := finishJobWrite(txn, index, plugins); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
