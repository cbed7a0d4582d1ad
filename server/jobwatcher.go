package server

import (
	"context"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// The jobwatcher runs on the leader and places what the cluster can now
// run without anyone asking: a system job's allocation on a node that
// became ready, an allocation that could not be placed before (a claim
// was held, a plugin was not healthy yet), and a replacement for an
// allocation lost with its node. It looks again whenever nodes, plugins,
// volumes, jobs or allocations change. It never replaces an allocation
// that failed or completed: a failed one was already restarted under its
// task's restart policy (run the job again to replace it), and a
// completed batch allocation is done.

// jobWatcherSettle is how long the watcher waits after a change before
// looking, so that a burst of writes makes one pass.
const jobWatcherSettle = 100 * time.Millisecond

// jobWatcherIdle is how often it looks with no change seen.
const jobWatcherIdle = 30 * time.Second

// watchJobs runs until ctx ends (leadership is lost).
func (s *Server) watchJobs(ctx context.Context) {
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		s.placeWaitingJobs(ctx, ws)
		wctx, cancel := context.WithTimeout(ctx, jobWatcherIdle)
		_ = ws.WatchCtx(wctx)
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(jobWatcherSettle):
		}
	}
}

// placeWaitingJobs makes one pass over the jobs, adding what it read to
// ws.
func (s *Server) placeWaitingJobs(ctx context.Context, ws memdb.WatchSet) {
	st := s.State()
	for _, watch := range []func(memdb.WatchSet) (memdb.ResultIterator, error){st.Nodes, st.CSIPlugins, st.CSIVolumes, st.Allocs} {
		if _, err := watch(ws); err != nil {
			s.logger.Error("jobwatcher: read state", "error", err)
			return
		}
	}
	iter, err := st.Jobs(ws)
	if err != nil {
		s.logger.Error("jobwatcher: read jobs", "error", err)
		return
	}
	var jobs []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); !j.Stop {
			jobs = append(jobs, j)
		}
	}
	for _, job := range jobs {
		if ctx.Err() != nil {
			return
		}
		if err := s.placeWaiting(job); err != nil {
			s.logger.Error("jobwatcher: place job", "job_id", job.ID, "namespace", job.Namespace, "error", err)
		}
	}
}

// placeWaiting places the job's missing allocations that fit now.
func (s *Server) placeWaiting(job *structs.Job) error {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	// The job may have changed or stopped since it was listed.
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil || cur == nil || cur.Stop || cur.ModifyIndex != job.ModifyIndex {
		return err
	}
	// A job stored before the count limit was set, or lowered, is not
	// placed by the leader unasked: running it again applies the limit.
	if err := cur.ValidateCount(s.config.JobMaxCount); err != nil {
		s.logger.Debug("jobwatcher: job is over the count limit; not placing it", "job_id", cur.ID, "namespace", cur.Namespace, "error", err)
		return nil
	}
	plan, _, err := s.schedule(cur, true)
	if err != nil || len(plan.Allocs) == 0 {
		return err
	}
	if _, _, err := raftApply[any](s, structs.PlanApplyRequestType, plan); err != nil {
		return err
	}
	for _, a := range plan.Allocs {
		s.logger.Info("jobwatcher: placed allocation", "job_id", cur.ID, "alloc_id", a.ID, "node_id", a.NodeID, "name", a.Name)
	}
	return nil
}
