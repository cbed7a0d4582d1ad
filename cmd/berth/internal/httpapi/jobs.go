package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/jobs[?prefix=]: the job stubs.
func (h *handler) jobList(w http.ResponseWriter, r *http.Request) error {
	var args structs.JobListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.JobListResponse
	if err := h.rpc(r, "Job.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Jobs))
}

// PUT /v1/jobs[?namespace=] with {"Job": {...}}: register the job and
// place its allocations. The answer is {"Placed": [...], "Failures": [...], "Index"}:
// a job that could not be fully placed is still registered, and Failures
// says why, per group.
func (h *handler) jobRegister(w http.ResponseWriter, r *http.Request) error {
	args, err := decodeJobRegister(w, r)
	if err != nil {
		return err
	}
	var reply structs.JobRegisterResponse
	if err := h.rpc(r, "Job.Register", args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	reply.Placed = nonNil(reply.Placed)
	reply.Failures = nonNil(reply.Failures)
	return writeJSON(w, r, &reply)
}

// decodeJobRegister reads the register request from the body and the
// query. The server validates the job (structs.Job.Validate); this only
// refuses a body with no job to validate.
func decodeJobRegister(w http.ResponseWriter, r *http.Request) (*structs.JobRegisterRequest, error) {
	var args structs.JobRegisterRequest
	if err := decodeBody(r, w, `object {"Job": {...}}`, &args); err != nil {
		return nil, err
	}
	writeNamespace(r, &args.WriteRequest)
	if args.Job == nil {
		return nil, badRequest(`request body has no job; send {"Job": {"ID": "web", "TaskGroups": [...]}}`)
	}
	if args.Job.ID == "" {
		return nil, badRequest(`request body's job has no ID; set "ID", e.g. {"Job": {"ID": "web", ...}}`)
	}
	// As in Nomad: without ?namespace= the request is for the job's own
	// namespace, which the servers check the token in. A job in another
	// namespace than ?namespace= is the servers' 400 (Job.ForRegister).
	switch {
	case args.Namespace == "":
		args.Namespace = args.Job.Namespace
	case args.Job.Namespace == "":
		args.Job.Namespace = args.Namespace
	}
	return &args, nil
}

// GET /v1/job/:id: one job, 404 when it does not exist.
func (h *handler) jobGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.SingleJobResponse
	if err := h.rpc(r, "Job.Get", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Job == nil {
		return notFound("job %q not found; list jobs with GET /v1/jobs", args.JobID)
	}
	return writeJSON(w, r, reply.Job)
}

// DELETE /v1/job/:id[?purge=true]: stop the job; purge also removes it.
func (h *handler) jobDeregister(w http.ResponseWriter, r *http.Request) error {
	args := structs.JobDeregisterRequest{JobID: r.PathValue("id")}
	var err error
	if args.Purge, err = flagParam(r, "purge"); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.JobDeregisterResponse
	if err := h.rpc(r, "Job.Deregister", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// GET /v1/job/:id/allocations: the job's allocation stubs.
func (h *handler) jobAllocations(w http.ResponseWriter, r *http.Request) error {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.JobAllocationsResponse
	if err := h.rpc(r, "Job.Allocations", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Allocations))
}
