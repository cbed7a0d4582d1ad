package structs

// JobRegisterRequest stores a job.
type JobRegisterRequest struct {
	Job *Job
	WriteRequest
}

// JobDeregisterRequest stops a job, or removes it with Purge.
type JobDeregisterRequest struct {
	JobID string
	Purge bool
	WriteRequest
}

// AllocUpsertRequest stores allocations: placements from the scheduler or
// status updates from clients.
type AllocUpsertRequest struct {
	Allocs []*Allocation
	WriteRequest
}
