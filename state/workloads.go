package state

import (
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// Release starts in the same transaction that makes an allocation
// terminal on its client: the client reports its tasks dead (complete or
// failed), or its node goes down (lost). Every taken claim of the
// allocation moves to unpublishing, and the leader's volumewatcher drives
// it from there. A job stop, or any other desired stop, only asks the
// client to stop the tasks: the claims stay taken until it says they are
// dead, so no second writer is placed while the first still runs.

// releaseAllocClaimsTxn moves the taken claims of the allocations to
// unpublishing, stamped at. It reports whether it wrote a volume.
func releaseAllocClaimsTxn(txn *memdb.Txn, index uint64, allocIDs []string, at time.Time) (bool, error) {
	wrote := false
	for _, allocID := range allocIDs {
		iter, err := txn.Get(TableCSIVolumes, indexClaimAlloc, allocID)
		if err != nil {
			return false, errInternal("volumes claimed by alloc "+allocID, err)
		}
		var vols []*structs.CSIVolume
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			vols = append(vols, raw.(*structs.CSIVolume))
		}
		for _, vol := range vols {
			if c := vol.HeldClaim(allocID); c == nil || c.State != structs.CSIVolumeClaimStateTaken {
				continue
			}
			next, err := releaseClaim(vol, &structs.CSIVolumeClaimRequest{VolumeID: vol.ID, AllocationID: allocID,
				State: structs.CSIVolumeClaimStateUnpublishing, Timestamp: at})
			if err != nil {
				return false, err
			}
			next.ModifyIndex = index
			if err := insertVolume(txn, next); err != nil {
				return false, err
			}
			wrote = true
		}
	}
	return wrote, nil
}

// releaseTerminalTxn releases the claims of the allocations among allocs
// that are over on their client. It reports whether it wrote a volume.
func releaseTerminalTxn(txn *memdb.Txn, index uint64, allocs []*structs.Allocation, at time.Time) (bool, error) {
	var terminal []string
	for _, a := range allocs {
		if a.ClientTerminalStatus() {
			terminal = append(terminal, a.ID)
		}
	}
	return releaseAllocClaimsTxn(txn, index, terminal, at)
}

// finishAllocWrite releases the claims of the allocations among allocs
// that are over on their client, and bumps the allocs index, and the volumes index when a claim
// moved.
func finishAllocWrite(txn *memdb.Txn, index uint64, allocs []*structs.Allocation, at time.Time) error {
	wrote, err := releaseTerminalTxn(txn, index, allocs, at)
	if err != nil {
		return err
	}
	tables := []string{TableAllocs}
	if wrote {
		tables = append(tables, TableCSIVolumes)
	}
	return bumpIndexes(txn, index, tables...)
}

// UpdateAllocsFromClient records what a client reports of its
// allocations: ClientStatus, ClientDescription and TaskStates; the rest is
// the servers'. An allocation the servers no longer have is skipped. One
// that becomes terminal starts releasing its claims in the same write.
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation, at time.Time) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	tables, err := updateAllocsFromClientTxn(txn, index, allocs, at)
	if err != nil || len(tables) == 0 {
		return err
	}
	if err := bumpIndexes(txn, index, tables...); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpdateAllocsFromClientBatch applies several client reports, in order, in
// one transaction (a reader sees all of the index or none of it), each as
// UpdateAllocsFromClient would alone, and answers one error per report. A
// refused report (an allocation without an ID) is refused before it
// writes, so it leaves no trace and the others apply. An internal error
// (memdb's own) can leave part of a report in the transaction: the batch
// is then aborted and every report answered with it.
func (s *StateStore) UpdateAllocsFromClientBatch(index uint64, reqs []structs.AllocClientUpdateRequest) []error {
	errs := make([]error, len(reqs))
	txn := s.writeTxn(index)
	defer txn.Abort()

	changed := map[string]bool{}
	for i := range reqs {
		tables, err := updateAllocsFromClientTxn(txn, index, reqs[i].Allocs, time.Unix(0, reqs[i].Timestamp))
		if errors.Is(err, structs.ErrInternal) {
			return allFailed(errs, err)
		}
		errs[i] = err
		for _, t := range tables {
			changed[t] = true
		}
	}
	if len(changed) == 0 {
		return errs
	}
	if err := bumpIndexes(txn, index, sortedKeys(changed)...); err != nil {
		return allFailed(errs, err)
	}
	txn.Commit()
	return errs
}

// updateAllocsFromClientTxn applies one client report to txn and returns
// the tables it changed, whose indexes the caller bumps (none when the
// servers have none of its allocations). It checks the whole report
// before it writes: a refusal leaves txn as it was. Once it writes, only
// an internal error can stop it, and the caller must abort txn.
func updateAllocsFromClientTxn(txn *memdb.Txn, index uint64, allocs []*structs.Allocation, at time.Time) ([]string, error) {
	for _, in := range allocs {
		if in == nil || in.ID == "" {
			return nil, errBadRequest("alloc update: an allocation without an ID")
		}
	}
	var updated []*structs.Allocation
	for _, in := range allocs {
		existing, err := allocByIDTxn(txn, nil, in.ID)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			continue
		}
		a := existing.Copy()
		// A lost alloc stays lost: its claims are gone; the client that
		// comes back is stopping it.
		if in.ClientStatus != "" && existing.ClientStatus != structs.AllocClientStatusLost {
			a.ClientStatus = in.ClientStatus
			a.ClientDescription = in.ClientDescription
			if in.ClientStatus == structs.AllocClientStatusLost {
				// Its client fenced it (cut off from the servers): as
				// with a node down, it is stopped, and may be replaced.
				a.DesiredStatus = structs.AllocDesiredStatusStop
			}
		}
		if in.TaskStates != nil {
			a.TaskStates = in.Copy().TaskStates
		}
		a.Timeline = a.Timeline.Merge(in.Timeline, structs.ClientStep)
		if a.ClientTerminalStatus() && !existing.ClientTerminalStatus() {
			a.Timeline = a.Timeline.Stamp(structs.StepTerminalReported, at)
		}
		switch {
		case a.ClientStatus != structs.AllocClientStatusRunning:
			a.RunningSince = 0
		case existing.ClientStatus != structs.AllocClientStatusRunning || a.RunningSince == 0:
			a.RunningSince = at.UnixNano() // the entry's time: the same on every server
		}
		switch {
		case a.ClientStatus != structs.AllocClientStatusFailed:
			a.FailTime = 0
		case existing.ClientStatus != structs.AllocClientStatusFailed || a.FailTime == 0:
			a.FailTime = at.UnixNano() // the reschedule delay counts from here
		}
		a.ModifyIndex = index
		if err := txn.Insert(TableAllocs, a); err != nil {
			return nil, errInternal("insert alloc "+a.ID, err)
		}
		updated = append(updated, a)
	}
	if len(updated) == 0 {
		return nil, nil
	}
	wrote, err := releaseTerminalTxn(txn, index, updated, at)
	if err != nil {
		// Only the claims it found taken are moved, and taken ->
		// unpublishing is always allowed: any error here is a bug, and
		// the allocs above are written already.
		if !errors.Is(err, structs.ErrInternal) {
			err = errInternal("release the claims of a client update", err)
		}
		return nil, err
	}
	if wrote {
		return []string{TableAllocs, TableCSIVolumes}, nil
	}
	return []string{TableAllocs}, nil
}

// stopAllocsTxn sets the allocations' desired status to stop, with why's
// Reason and ReplacedByVersion as their StopReason and ReplacedByVersion
// (AllocStopNone leaves them) and its Description as their
// DesiredDescription ("" leaves it; why.AllocID is not read), and, when
// lost is set (their node went down), their client status to lost, and
// returns the ones it changed. An allocation already asked to stop is
// still marked lost when its node goes down: its client can no longer
// report its tasks dead.
func stopAllocsTxn(txn *memdb.Txn, index uint64, allocs []*structs.Allocation, lost bool, why structs.AllocStop, at time.Time) ([]*structs.Allocation, error) {
	var changed []*structs.Allocation
	for _, existing := range allocs {
		if existing.ClientTerminalStatus() || (!lost && existing.DesiredStatus == structs.AllocDesiredStatusStop) {
			continue
		}
		a := existing.Copy()
		// A lost alloc is stopped too: its claims are released and it
		// may be replaced, so a client that comes back must kill it.
		a.DesiredStatus = structs.AllocDesiredStatusStop
		a.Timeline = a.Timeline.Stamp(structs.StepStopRequested, at)
		if why.Reason != structs.AllocStopNone {
			a.StopReason, a.ReplacedByVersion = why.Reason, why.ReplacedByVersion
		}
		if why.Description != "" {
			a.DesiredDescription = why.Description
		}
		if lost {
			a.ClientStatus = structs.AllocClientStatusLost
			a.ClientDescription = "its node went down"
		}
		a.ModifyIndex = index
		if err := txn.Insert(TableAllocs, a); err != nil {
			return nil, errInternal("insert alloc "+a.ID, err)
		}
		changed = append(changed, a)
	}
	return changed, nil
}

// allocsTxn collects the allocations an index lookup finds.
func allocsTxn(txn *memdb.Txn, index string, args ...any) ([]*structs.Allocation, error) {
	iter, err := txn.Get(TableAllocs, index, args...)
	if err != nil {
		return nil, errInternal("read allocs", err)
	}
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Allocation))
	}
	return out, nil
}

// StopJob marks a job stopped and sets its allocations' desired status to
// stop, in one write. Their claims are not released here: that waits for
// each allocation's client to report its tasks dead (or its node to go
// down), so that no claim is freed under a live task; an allocation
// already over on its client releases its claims in this write. With
// purge the job is deleted too, with those of
// its allocations that are over on their client and hold no claim that is
// not freed (see purgeAllocsTxn).
func (s *StateStore) StopJob(index uint64, namespace, id string, purge bool, at time.Time) error {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	txn := s.writeTxn(index)
	defer txn.Abort()

	existing, err := jobByIDTxn(txn, nil, namespace, id)
	if err != nil {
		return err
	}
	if existing == nil {
		return errNotFound("job %q not found in namespace %q; check the job id (berth job status)", id, namespace)
	}
	if purge {
		if err := txn.Delete(TableJobs, existing); err != nil {
			return errInternal("delete job "+id, err)
		}
		if err := deleteJobVersionsTxn(txn, index, namespace, id); err != nil {
			return err
		}
	} else {
		j := existing.Copy()
		j.Stop = true
		j.ModifyIndex = index
		if err := txn.Insert(TableJobs, j); err != nil {
			return errInternal("insert job "+id, err)
		}
	}
	allocs, err := allocsTxn(txn, indexJob, namespace, id)
	if err != nil {
		return err
	}
	stopped, err := stopAllocsTxn(txn, index, allocs, false, structs.StopForJobStop(), at)
	if err != nil {
		return err
	}
	if err := finishAllocWrite(txn, index, stopped, at); err != nil {
		return err
	}
	if purge {
		// Its allocations already over, and holding no live claim, go
		// with it; garbage collection removes the others once they are.
		if err := purgeAllocsTxn(txn, index, namespace, id); err != nil {
			return err
		}
	}
	if err := finishJobWrite(txn, index, existing.CSIPluginIDs()); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// loseNodeAllocsTxn marks the live allocations of a node that went down
// lost and releases their claims.
func loseNodeAllocsTxn(txn *memdb.Txn, index uint64, nodeID string, at time.Time) error {
	allocs, err := allocsTxn(txn, indexNodeID, nodeID)
	if err != nil {
		return err
	}
	lost, err := stopAllocsTxn(txn, index, allocs, true, structs.AllocStop{}, at)
	if err != nil || len(lost) == 0 {
		return err
	}
	return finishAllocWrite(txn, index, lost, at)
}
