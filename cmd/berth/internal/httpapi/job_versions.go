package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// PUT /v1/job/:id/plan with {"Job": {...}}: what running the job would
// do, changing nothing. The path's ID must be the job's.
func (h *handler) jobPlan(w http.ResponseWriter, r *http.Request) error {
	reg, err := decodeJobRegister(w, r)
	if err != nil {
		return err
	}
	if id := r.PathValue("id"); reg.Job.ID != id {
		return badRequest("the path names job %q but the body's job is %q; plan it at /v1/job/%s/plan", id, reg.Job.ID, reg.Job.ID)
	}
	args := structs.JobPlanRequest{Job: reg.Job, WriteRequest: reg.WriteRequest}
	var reply structs.JobPlanResponse
	if err := h.rpc(r, "Job.Plan", &args, &reply); err != nil {
		return err
	}
	reply.Groups, reply.Placed, reply.Stopped = nonNil(reply.Groups), nonNil(reply.Placed), nonNil(reply.Stopped)
	reply.Claims, reply.Failures = nonNil(reply.Claims), nonNil(reply.Failures)
	return writeJSON(w, r, &reply)
}

// GET /v1/job/:id/versions: the job's kept versions, newest first
// ({"Versions": [...]}); 404 for a job that does not exist.
func (h *handler) jobVersions(w http.ResponseWriter, r *http.Request) error {
	args := structs.JobSpecificRequest{JobID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.JobVersionsResponse
	if err := h.rpc(r, "Job.Versions", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, map[string]any{"Versions": nonNil(reply.Versions)})
}

// PUT /v1/job/:id/revert with {"JobVersion": N}: run version N of the job
// again, as its next version; the answer is a register's.
func (h *handler) jobRevert(w http.ResponseWriter, r *http.Request) error {
	var body struct{ JobVersion *uint64 }
	if err := decodeBody(r, w, `object {"JobVersion": 2}`, &body); err != nil {
		return err
	}
	if body.JobVersion == nil {
		return badRequest(`request body has no JobVersion; send {"JobVersion": N} (see berth job history %s)`, r.PathValue("id"))
	}
	args := structs.JobRevertRequest{JobID: r.PathValue("id"), Version: *body.JobVersion}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.JobRegisterResponse
	if err := h.rpc(r, "Job.Revert", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	reply.Placed, reply.Failures = nonNil(reply.Placed), nonNil(reply.Failures)
	return writeJSON(w, r, &reply)
}
