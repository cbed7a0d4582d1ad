package api

import (
	"fmt"
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// Plan says what running job would do (placements, stops, replacements,
// claims), changing nothing.
func (j *Jobs) Plan(job *structs.Job) (*structs.JobPlanResponse, error) {
	if job == nil || job.ID == "" {
		return nil, fmt.Errorf("api: plan job: the job has no ID")
	}
	body := struct{ Job *jobWire }{Job: toJobWire(job)}
	var out structs.JobPlanResponse
	if _, err := j.c.write(http.MethodPut, "/v1/job/"+escape(job.ID)+"/plan", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Versions returns the job's kept versions, newest first; a missing job
// is an error that matches structs.ErrNotFound.
func (j *Jobs) Versions(id string, q *QueryOptions) ([]*structs.Job, *QueryMeta, error) {
	var out struct{ Versions []*structs.Job }
	qm, err := j.c.query("/v1/job/"+escape(id)+"/versions", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out.Versions, qm, nil
}

// Revert runs version of the job again, as its next version.
func (j *Jobs) Revert(id string, version uint64) (*structs.JobRegisterResponse, *WriteMeta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("api: revert job: no job ID given")
	}
	var out structs.JobRegisterResponse
	wm, err := j.c.write(http.MethodPut, "/v1/job/"+escape(id)+"/revert", nil, map[string]uint64{"JobVersion": version}, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
