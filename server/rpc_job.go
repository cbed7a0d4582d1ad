package server

import (
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/server/scheduler"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Job serves job registration, stop and reads, and Alloc the allocations.
type Job struct{ srv *Server }

// Register stores a job and places its missing allocations, with the
// claims they reserve, in one raft write. Allocations that cannot be
// placed are reported with the reasons, per node class of reason.
func (j *Job) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	if args.Job == nil {
		return structs.NewError(structs.CodeBadRequest, "job register: the request carries no job")
	}
	job, err := j.checkJob(args.AuthToken, args.RequestNamespace(), args.Job)
	if err != nil {
		return err
	}
	return j.register(job, reply)
}

// checkJob validates a job to run in namespace ns (submit-job was checked
// there) and checks that the token may run what it needs and that it is
// not too heavy to place: a copy, ready to plan.
func (j *Job) checkJob(token, ns string, in *structs.Job) (*structs.Job, error) {
	// Validate before anything reads the groups and tasks: a null entry
	// is a 400 naming it, never a panic. The job goes to the namespace
	// submit-job was checked in: one naming another is a 400.
	job, err := in.ForRegister(ns, j.srv.config.JobMaxCount)
	if err != nil {
		return nil, err
	}
	if err := j.allowJobNeeds(token, job); err != nil {
		return nil, err
	}
	if err := checkJobWeight(job); err != nil {
		return nil, err
	}
	return job, nil
}

// register runs a checked job: it stores it and, in one raft write, places
// its missing allocations and stops what it replaces.
func (j *Job) register(job *structs.Job, reply *structs.JobRegisterResponse) error {
	job.Stop = false
	job.SubmitTime = time.Now().UnixNano()
	// One scheduling pass at a time: two passes must not plan the same claim.
	j.srv.planMu.Lock()
	defer j.srv.planMu.Unlock()
	res, err := j.srv.planner.Plan(j.srv.State(), job, scheduler.Run)
	if err != nil {
		return err
	}
	_, index, err := raftApply[any](j.srv, structs.PlanApplyRequestType, res.Plan.ForRaft())
	if err != nil {
		return err
	}
	for _, a := range res.Plan.Allocs {
		reply.Placed = append(reply.Placed, a.Stub())
	}
	reply.Failures, reply.Stopped, reply.Groups = res.Failures, res.Plan.Stops, res.Groups
	stored, err := j.srv.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if stored != nil {
		reply.JobVersion = stored.Version
	}
	reply.Index = index
	return nil
}

// Deregister stops a job and its allocations, which starts releasing
// their claims in the same write; Purge deletes the job too.
func (j *Job) Deregister(args *structs.JobDeregisterRequest, reply *structs.JobDeregisterResponse) error {
	if args.JobID == "" {
		return structs.NewError(structs.CodeBadRequest, "job stop: missing the job ID")
	}
	args.Timestamp = time.Now().UnixNano()
	_, index, err := raftApply[any](j.srv, structs.JobDeregisterRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// List lists jobs, with a status derived from their allocations.
func (j *Job) List(args *structs.JobListRequest, reply *structs.JobListResponse) error {
	ns := args.RequestNamespace()
	return j.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.Jobs(ws)
		if err != nil {
			return err
		}
		reply.Jobs = []*structs.JobListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			job := raw.(*structs.Job)
			if job.Namespace != ns || !strings.HasPrefix(job.ID, args.Prefix) {
				continue
			}
			status, err := jobStatus(ws, st, job)
			if err != nil {
				return err
			}
			reply.Jobs = append(reply.Jobs, &structs.JobListStub{ID: job.ID, Namespace: job.Namespace, Name: job.Name,
				Type: job.Type, Stop: job.Stop, Status: status, CreateIndex: job.CreateIndex, ModifyIndex: job.ModifyIndex})
		}
		reply.Index, err = maxIndex(st, state.TableJobs, state.TableAllocs)
		return err
	})
}

// jobStatus is running while any allocation is live, pending before any
// was placed, dead after.
func jobStatus(ws memdb.WatchSet, st *state.StateStore, job *structs.Job) (string, error) {
	iter, err := st.AllocsByJob(ws, job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	placed := false
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		placed = true
		if !raw.(*structs.Allocation).TerminalStatus() {
			return "running", nil
		}
	}
	if !placed && !job.Stop {
		return "pending", nil
	}
	return "dead", nil
}

// Get reads one job.
func (j *Job) Get(args *structs.JobSpecificRequest, reply *structs.SingleJobResponse) error {
	return j.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		job, err := st.JobByID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return err
		}
		reply.Job = job
		reply.Index, err = maxIndex(st, state.TableJobs)
		return err
	})
}

// Allocations lists a job's allocations.
func (j *Job) Allocations(args *structs.JobSpecificRequest, reply *structs.JobAllocationsResponse) error {
	return j.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.AllocsByJob(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return err
		}
		reply.Allocations = allocStubs(iter)
		reply.Index, err = maxIndex(st, state.TableAllocs)
		return err
	})
}
