package structs

// JobRegisterRequest stores a job.
type JobRegisterRequest struct {
	Job *Job
	WriteRequest
}

// JobDeregisterRequest stops a job and its allocations, or removes it
// with Purge. Timestamp (unix nanoseconds) is stamped by the endpoint.
type JobDeregisterRequest struct {
	JobID     string
	Purge     bool
	Timestamp int64
	WriteRequest
}

// JobRegisterResponse answers a job register: the allocations the
// scheduler placed in the same write, and why the others could not be.
type JobRegisterResponse struct {
	Placed   []*AllocListStub
	Failures []*PlacementFailure
	// Stopped are the allocations the run stopped (over count, or
	// replaced by the new version), Groups what it did to each group.
	Stopped []AllocStop    `json:",omitempty"`
	Groups  []*GroupChange `json:",omitempty"`
	// JobVersion is the job's version after the run: the same as before
	// when its spec did not change.
	JobVersion uint64
	WriteMeta
}

// PlacementFailure says why allocations of a task group could not be
// placed: one line per node class of reason, each naming the volume, the
// alloc holding it and the node where that explains it.
type PlacementFailure struct {
	TaskGroup string
	Missing   int // allocations not placed
	Reasons   []string
	// Replacing: the group is being updated and the allocations not
	// placed wait for the ones they replace to stop and free their
	// claims; the leader places them then, unasked.
	Replacing bool `json:",omitempty"`
}

// GroupChange is what a run of a job does to one of its groups, as
// `berth job plan` and `berth job run` show it.
type GroupChange struct {
	TaskGroup string
	// Place is how many allocations the run places now.
	Place int
	// Stop is how many it stops: over a lowered count, or replaced.
	Stop int
	// Replace is how many of those stopped are replaced by the new
	// version; Outdated how many older-version allocations keep running
	// for now, to be replaced as the update goes on.
	Replace  int
	Outdated int
	// Unchanged is how many allocations keep running as they are.
	Unchanged int
	// UpdateFailed says why a rolling update stopped ("" while it goes
	// on): a replacement failed or was not healthy in time.
	UpdateFailed string `json:",omitempty"`
}

// JobListRequest lists jobs.
type JobListRequest struct {
	QueryOptions
}

// JobListResponse answers JobListRequest.
type JobListResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// JobListStub is a job as lists show it.
type JobListStub struct {
	ID          string
	Namespace   string
	Name        string
	Type        string
	Stop        bool
	Status      string // pending, running, dead
	CreateIndex uint64
	ModifyIndex uint64
}

// JobSpecificRequest reads one job, or its allocations.
type JobSpecificRequest struct {
	JobID string
	QueryOptions
}

// SingleJobResponse answers JobSpecificRequest; Job is nil when absent.
type SingleJobResponse struct {
	Job *Job
	QueryMeta
}

// JobAllocationsResponse lists a job's allocations.
type JobAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// JobDeregisterResponse answers JobDeregisterRequest.
type JobDeregisterResponse struct {
	WriteMeta
}

// AllocListRequest lists allocations.
type AllocListRequest struct {
	QueryOptions
}

// AllocListResponse answers AllocListRequest.
type AllocListResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// AllocSpecificRequest reads one allocation.
type AllocSpecificRequest struct {
	AllocID string
	QueryOptions
}

// SingleAllocResponse answers AllocSpecificRequest; Alloc is nil when
// absent.
type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

// NodeClientAllocsResponse answers Node.GetClientAllocs (a
// NodeSpecificRequest, blocking): every allocation placed on the node,
// with its job.
type NodeClientAllocsResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// AllocUpdateRequest is a client's report of its allocations: ID,
// ClientStatus, ClientDescription and TaskStates are read; every other
// field is the servers'.
type AllocUpdateRequest struct {
	Allocs []*Allocation
	WriteRequest
}

// ClientAllocLogsRequest reads a task's log (Kind "stdout" or "stderr")
// from the client that runs the allocation. Offset is where to start;
// Limit 0 means all.
type ClientAllocLogsRequest struct {
	AllocID string
	NodeID  string
	Task    string
	Kind    string
	Offset  int64
	Limit   int64
	QueryOptions
}

// ClientAllocLogsResponse is the log's bytes from Offset, and its size.
type ClientAllocLogsResponse struct {
	Data []byte
	Size int64
}

// PlanApplyRequest is the raft entry of a placement: the job (when the
// placement comes with its registration), the new allocations and the
// claims they reserve, applied all or nothing.
type PlanApplyRequest struct {
	Job    *Job
	Allocs []*Allocation
	Claims []CSIVolumeClaimRequest
	// Stops are allocations of the job to stop: replaced by a newer
	// version, or over a lowered count.
	Stops []AllocStop `json:",omitempty"`
	// Timestamp is when it was planned (unix nanoseconds): the new
	// allocations' CreateTime.
	Timestamp int64
	// JobID and JobModifyIndex name, for a placement without Job (the
	// leader's own pass), the job as it was when planned: the plan is
	// refused if the job changed, stopped or went since.
	JobID          string
	JobModifyIndex uint64
	WriteRequest
}

// ForRaft returns the plan as its raft entry carries it: its allocations
// without their job, which the FSM sets to the job as stored (a plan that
// names its job: Job, or JobID). A system job placed on 10,000 nodes is
// one copy of the job in the entry, not 10,000. The plan itself is not
// changed.
func (r *PlanApplyRequest) ForRaft() *PlanApplyRequest {
	if r.Job == nil && r.JobID == "" {
		return r
	}
	out := *r
	out.Allocs = make([]*Allocation, len(r.Allocs))
	for i, a := range r.Allocs {
		if a == nil {
			continue
		}
		c := *a // shallow: only Job changes
		c.Job = nil
		out.Allocs[i] = &c
	}
	return &out
}

// AllocClientUpdateRequest is the raft entry of a client's report of its
// allocations (see AllocUpdateRequest). Timestamp is stamped by the
// endpoint.
type AllocClientUpdateRequest struct {
	Allocs    []*Allocation
	Timestamp int64 // unix nanoseconds
}

// AllocClientUpdateBatchRequest is client alloc reports that the leader
// coalesced into one raft entry; the FSM applies each on its own, all or
// nothing, and answers one error per report ([]error).
type AllocClientUpdateBatchRequest struct {
	Updates []AllocClientUpdateRequest
}

// JobPlanRequest asks what running a job would do, changing nothing.
type JobPlanRequest struct {
	Job *Job
	WriteRequest
}

// JobPlanResponse answers JobPlanRequest: what a run would place, stop
// and claim now, and what it could not place.
type JobPlanResponse struct {
	// Changed: the job's spec differs from the stored one (or there is
	// none); JobVersion is the version a run would give it.
	Changed    bool
	JobVersion uint64
	Groups     []*GroupChange
	Placed     []*AllocListStub
	Stopped    []AllocStop
	// Claims are the volume claims the placements would take.
	Claims   []CSIVolumeClaimRequest
	Failures []*PlacementFailure
}

// JobVersionsResponse lists a job's kept versions, newest first.
type JobVersionsResponse struct {
	Versions []*Job
	QueryMeta
}

// JobRevertRequest runs an earlier version of a job again, as a new
// version.
type JobRevertRequest struct {
	JobID   string
	Version uint64
	WriteRequest
}
