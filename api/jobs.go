package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/berth-csi/berth/structs"
)

// Jobs reads, registers and stops jobs.
type Jobs struct{ c *Client }

// Jobs returns the job endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{c} }

// Register stores job and has the scheduler place its allocations in the
// same write. The answer lists the allocations placed and, per group, why
// the others could not be (Failures); a job that could not be fully
// placed is still registered. Mount flags of its volume requests are sent
// as they are (structs.CSIMountOptions would redact them in JSON).
func (j *Jobs) Register(job *structs.Job) (*structs.JobRegisterResponse, *WriteMeta, error) {
	if job == nil || job.ID == "" {
		return nil, nil, fmt.Errorf("api: register job: the job has no ID")
	}
	body := struct{ Job *jobWire }{Job: toJobWire(job)}
	var out structs.JobRegisterResponse
	wm, err := j.c.write(http.MethodPut, "/v1/jobs", nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// List returns the jobs, filtered by q.Prefix.
func (j *Jobs) List(q *QueryOptions) ([]*structs.JobListStub, *QueryMeta, error) {
	var out []*structs.JobListStub
	qm, err := j.c.query("/v1/jobs", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info returns one job by its full ID; a missing job is an error that
// matches structs.ErrNotFound.
func (j *Jobs) Info(id string, q *QueryOptions) (*structs.Job, *QueryMeta, error) {
	var out structs.Job
	qm, err := j.c.query("/v1/job/"+escape(id), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Allocations returns the allocations of the job with the full ID id. With
// q.WaitIndex it is a blocking query: it answers once they change.
func (j *Jobs) Allocations(id string, q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	qm, err := j.c.query("/v1/job/"+escape(id)+"/allocations", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Deregister stops the job: its allocations are stopped and their volume
// claims released. purge also removes the job, so it no longer lists.
func (j *Jobs) Deregister(id string, purge bool) (*WriteMeta, error) {
	if id == "" {
		return nil, fmt.Errorf("api: stop job: no job ID given")
	}
	var params url.Values
	if purge {
		params = url.Values{"purge": []string{"true"}}
	}
	return j.c.write(http.MethodDelete, "/v1/job/"+escape(id), params, nil, nil)
}

// jobWire is a job as the register body carries it: structs.Job's JSON,
// with each volume request's mount options unredacted. The embedded
// pointers give every other field; the outer fields, being shallower,
// replace the ones of the same name.
type jobWire struct {
	*structs.Job
	TaskGroups []*taskGroupWire
}

type taskGroupWire struct {
	*structs.TaskGroup
	Volumes map[string]*volumeRequestWire
}

type volumeRequestWire struct {
	*structs.VolumeRequest
	MountOptions *MountOptions `json:",omitempty"`
}

func toJobWire(job *structs.Job) *jobWire {
	w := &jobWire{Job: job}
	if job.TaskGroups == nil {
		return w
	}
	w.TaskGroups = make([]*taskGroupWire, len(job.TaskGroups))
	for i, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		tw := &taskGroupWire{TaskGroup: tg}
		if tg.Volumes != nil {
			tw.Volumes = make(map[string]*volumeRequestWire, len(tg.Volumes))
			for alias, v := range tg.Volumes {
				if v == nil {
					tw.Volumes[alias] = nil
					continue
				}
				vw := &volumeRequestWire{VolumeRequest: v}
				if v.MountOptions != nil {
					vw.MountOptions = &MountOptions{FSType: v.MountOptions.FSType, MountFlags: v.MountOptions.MountFlags,
						GroupPolicy: v.MountOptions.GroupPolicy}
				}
				tw.Volumes[alias] = vw
			}
		}
		w.TaskGroups[i] = tw
	}
	return w
}
