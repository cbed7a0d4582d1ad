package server

import (
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/rpc"
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
	_, index, err := raftApply[any](j.srv, structs.PlanApplyRequestType, res.Plan)
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

// Alloc serves allocation reads.
type Alloc struct{ srv *Server }

// List lists allocations, filtered by ID prefix: those of every namespace
// the token may read jobs in; it needs read-job in the request's namespace.
func (a *Alloc) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) error {
	acls, _, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.Allocs(ws)
		if err != nil {
			return err
		}
		reply.Allocations = []*structs.AllocListStub{}
		for _, s := range allocStubs(iter) {
			if strings.HasPrefix(s.ID, args.Prefix) && acls.AllowNamespaceOperation(s.Namespace, acl.CapReadJob) {
				reply.Allocations = append(reply.Allocations, s)
			}
		}
		reply.Index, err = maxIndex(st, state.TableAllocs)
		return err
	})
}

// Get reads one allocation with its job and task states.
func (a *Alloc) Get(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) error {
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		alloc, err := st.AllocByID(ws, args.AllocID)
		if err != nil {
			return err
		}
		if alloc != nil {
			if err := a.srv.allowNamespace(args.AuthToken, alloc.Namespace, acl.CapReadJob); err != nil {
				return err
			}
		}
		reply.Alloc = alloc
		reply.Index, err = maxIndex(st, state.TableAllocs)
		return err
	})
}

// allowJobNeeds checks what a job asks for beyond submit-job: mounting CSI
// volumes (csi-mount-volume), and running CSI plugins. A plugin ID is
// cluster-wide: the servers send any instance of a plugin every
// namespace's calls for its volumes, secrets included. So a plugin task
// needs plugin write, a cluster permission, as well as
// csi-register-plugin in the job's namespace (which a namespace's write
// grants, as in Nomad).
func (j *Job) allowJobNeeds(token string, job *structs.Job) error {
	for _, tg := range job.TaskGroups {
		for _, v := range tg.Volumes {
			if v.Type == "csi" {
				if err := j.srv.allowNamespace(token, job.Namespace, acl.CapCSIMountVolume); err != nil {
					return err
				}
			}
		}
		for _, t := range tg.Tasks {
			if t.CSIPluginConfig == nil {
				continue
			}
			if err := j.srv.allowNamespace(token, job.Namespace, acl.CapCSIRegisterPlugin); err != nil {
				return err
			}
			a, _, err := j.srv.resolveToken(token)
			if err != nil {
				return err
			}
			if !a.AllowPluginWrite() {
				return errPermission("running plugin %q (task %q) needs plugin policy %q", t.CSIPluginConfig.ID, t.Name, acl.PolicyWrite)
			}
		}
	}
	return nil
}

func allocStubs(iter memdb.ResultIterator) []*structs.AllocListStub {
	out := []*structs.AllocListStub{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Allocation).Stub())
	}
	return out
}

// maxJobWeight bounds the copies of a job its allocations carry in all:
// each allocation holds its job, in the plan's raft write and in its
// node's allocation list, which must fit in one RPC frame.
const maxJobWeight = rpc.MaxFrameSize / 2

// checkJobWeight refuses a job whose allocations would carry more than
// maxJobWeight of copies of it.
func checkJobWeight(job *structs.Job) error {
	b, err := structs.Encode(structs.PlanApplyRequestType, job)
	if err != nil {
		return structs.NewError(structs.CodeBadRequest, "job %q cannot be encoded: %v", job.ID, err)
	}
	count := 0
	for _, tg := range job.TaskGroups {
		count += tg.Count
	}
	if weight := int64(count) * int64(len(b)); weight > maxJobWeight {
		return structs.NewError(structs.CodeBadRequest,
			"job %q: %d allocations of a %d-byte job would carry %d MiB of copies of it (each allocation holds its job), "+
				"over the %d MiB one placement write or one node's allocation list may carry; lower count, or make the job smaller",
			job.ID, count, len(b), weight>>20, maxJobWeight>>20)
	}
	return nil
}
