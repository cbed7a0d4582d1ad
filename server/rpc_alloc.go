package server

import (
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

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
