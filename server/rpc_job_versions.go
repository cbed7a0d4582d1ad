package server

import (
	"strconv"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/server/scheduler"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Plan says what running the job would do (place, stop, replace, claim)
// and changes nothing.
func (j *Job) Plan(args *structs.JobPlanRequest, reply *structs.JobPlanResponse) error {
	if args.Job == nil {
		return structs.NewError(structs.CodeBadRequest, "job plan: the request carries no job")
	}
	job, err := j.checkJob(args.AuthToken, args.RequestNamespace(), args.Job)
	if err != nil {
		return err
	}
	job.Stop = false
	st := j.srv.State()
	j.srv.planMu.Lock()
	res, err := j.srv.planner.Plan(st, job, scheduler.Run)
	j.srv.planMu.Unlock()
	if err != nil {
		return err
	}
	stored, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	// The planner's version is the stored one's exactly when the spec is
	// the same (structs.NextJobVersion).
	reply.Changed = stored == nil || stored.Stop || res.JobVersion != stored.Version
	reply.JobVersion = res.JobVersion
	for _, a := range res.Plan.Allocs {
		reply.Placed = append(reply.Placed, a.Stub())
	}
	reply.Groups, reply.Stopped, reply.Claims, reply.Failures = res.Groups, res.Plan.Stops, res.Plan.Claims, res.Failures
	return nil
}

// Versions lists the job's kept versions, newest first.
func (j *Job) Versions(args *structs.JobSpecificRequest, reply *structs.JobVersionsResponse) error {
	return j.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		versions, err := st.JobVersions(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return err
		}
		if len(versions) == 0 {
			// A job stored before versions were kept (restored from an
			// older snapshot) is its own only version.
			job, err := st.JobByID(ws, args.RequestNamespace(), args.JobID)
			if err != nil {
				return err
			}
			if job != nil {
				versions = []*structs.Job{job}
			}
		}
		if len(versions) == 0 {
			return structs.NewError(structs.CodeNotFound, "job %s not found in namespace %q; check the job ID (berth job status)",
				structs.QuoteName(args.JobID), args.RequestNamespace())
		}
		reply.Versions = versions
		reply.Index, err = maxIndex(st, state.TableJobVersions)
		return err
	})
}

// Revert runs a kept earlier version of the job again: it becomes the
// job's next version, and its allocations replace the running ones as
// for any change.
func (j *Job) Revert(args *structs.JobRevertRequest, reply *structs.JobRegisterResponse) error {
	ns := args.RequestNamespace()
	st := j.srv.State()
	old, err := st.JobVersion(nil, ns, args.JobID, args.Version)
	if err != nil {
		return err
	}
	if old == nil {
		versions, err := st.JobVersions(nil, ns, args.JobID)
		if err != nil {
			return err
		}
		if len(versions) == 0 {
			return structs.NewError(structs.CodeNotFound, "job %s not found in namespace %q; check the job ID (berth job status)",
				structs.QuoteName(args.JobID), ns)
		}
		return structs.NewError(structs.CodeNotFound, "job %s has no version %d kept; its versions are %s (berth job history %s)",
			structs.QuoteName(args.JobID), args.Version, versionList(versions), args.JobID)
	}
	job, err := j.checkJob(args.AuthToken, ns, old)
	if err != nil {
		return err
	}
	return j.register(job, reply)
}

// versionList renders versions as "3, 2 and 1".
func versionList(versions []*structs.Job) string {
	s := ""
	for i, v := range versions {
		switch {
		case i == 0:
		case i == len(versions)-1:
			s += " and "
		default:
			s += ", "
		}
		s += strconv.FormatUint(v.Version, 10)
	}
	return s
}
