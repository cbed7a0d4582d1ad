package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func testJob() *structs.Job {
	return &structs.Job{
		ID: "db", Name: "db", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{
			Name: "db", Count: 2,
			Volumes: map[string]*structs.VolumeRequest{"data": {
				Name: "data", Type: "csi", Source: "data", PerAlloc: true,
				AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
				AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
				MountOptions:   &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"uid=1000"}, GroupPolicy: structs.GroupPolicyAlways},
			}},
			Tasks: []*structs.Task{{
				Name: "server", Driver: "exec",
				Config:       map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 1"}},
				Env:          map[string]string{"K": "v"},
				KillTimeout:  5 * time.Second,
				Restart:      &structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"},
				VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/data", PropagationMode: "private"}},
			}},
		}},
	}
}

func TestJobs_Register_SendsJobAndReturnsPlacement(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/jobs": {index: "90", body: `{"Placed":[{"ID":"a1","JobID":"db","TaskGroup":"db","NodeID":"n1","ClientStatus":"pending"}],` +
			`"Failures":[{"TaskGroup":"db","Missing":1,"Reasons":["volume \"data[1]\" not found"]}],"Index":90}`},
	})
	job := testJob()
	resp, wm, err := c.Jobs().Register(job)
	must.NoError(t, err)
	must.EqOp(t, uint64(90), wm.LastIndex)
	must.Eq(t, []*structs.AllocListStub{{ID: "a1", JobID: "db", TaskGroup: "db", NodeID: "n1", ClientStatus: "pending"}}, resp.Placed)
	must.Eq(t, []*structs.PlacementFailure{{TaskGroup: "db", Missing: 1, Reasons: []string{`volume "data[1]" not found`}}}, resp.Failures)

	last := cs.last(t)
	must.EqOp(t, "PUT", last.method)
	must.EqOp(t, "/v1/jobs", last.path)
	// The server decodes the body into structs types: the job reads back
	// whole, mount flags included.
	var req structs.JobRegisterRequest
	must.NoError(t, json.Unmarshal([]byte(last.body), &req))
	want := testJob()
	want.TaskGroups[0].Tasks[0].Config["args"] = []any{"-c", "sleep 1"} // JSON's own list type
	must.Eq(t, want, req.Job)
	must.StrNotContains(t, last.body, structs.Redacted)
	// The caller's job is left as it was.
	must.Eq(t, testJob(), job)
}

func TestJobs_Register_Errors(t *testing.T) {
	msg := `job "db": group "db": volume "data": plugin "hostpath" has no healthy node`
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/jobs": {status: 400, body: `{"Code":"BadRequest","Message":` + quote(msg) + `}`},
	})
	t.Run("no ID", func(t *testing.T) {
		_, _, err := c.Jobs().Register(&structs.Job{})
		must.ErrorContains(t, err, "api: register job: the job has no ID")
		_, _, err = c.Jobs().Register(nil)
		must.ErrorContains(t, err, "has no ID")
		must.Zero(t, cs.count())
	})
	t.Run("server refuses", func(t *testing.T) {
		resp, wm, err := c.Jobs().Register(testJob())
		must.Nil(t, resp)
		must.Nil(t, wm)
		must.EqError(t, err, msg)
		must.ErrorIs(t, err, structs.ErrBadRequest)
	})
}

func TestJobs_Reads(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/jobs":                    {index: "91", body: `[{"ID":"db","Type":"service","Status":"running"}]`},
		"GET /v1/job/a b":                 {index: "92", body: `{"ID":"a b","Type":"batch","TaskGroups":[{"Name":"g","Count":1}]}`},
		"GET /v1/job/db/allocations":      {index: "93", body: `[{"ID":"a1","ClientStatus":"running"},{"ID":"a2","ClientStatus":"failed"}]`},
		"GET /v1/job/missing":             {status: 404, body: `{"Code":"NotFound","Message":"job \"missing\" not found"}`},
		"GET /v1/job/missing/allocations": {status: 404, body: `{"Code":"NotFound","Message":"job \"missing\" not found"}`},
	})
	t.Run("list by prefix", func(t *testing.T) {
		jobs, qm, err := c.Jobs().List(&QueryOptions{Prefix: "d"})
		must.NoError(t, err)
		must.EqOp(t, uint64(91), qm.LastIndex)
		must.Eq(t, []*structs.JobListStub{{ID: "db", Type: "service", Status: "running"}}, jobs)
		must.EqOp(t, "prefix=d", cs.last(t).query)
	})
	t.Run("info escapes the ID", func(t *testing.T) {
		job, qm, err := c.Jobs().Info("a b", nil)
		must.NoError(t, err)
		must.EqOp(t, uint64(92), qm.LastIndex)
		must.EqOp(t, "batch", job.Type)
		must.EqOp(t, "/v1/job/a%20b", cs.last(t).rawPath)
	})
	t.Run("allocations block", func(t *testing.T) {
		allocs, qm, err := c.Jobs().Allocations("db", &QueryOptions{WaitIndex: 90, WaitTime: 30 * time.Second})
		must.NoError(t, err)
		must.EqOp(t, uint64(93), qm.LastIndex)
		must.Len(t, 2, allocs)
		must.EqOp(t, "failed", allocs[1].ClientStatus)
		must.EqOp(t, "index=90&wait=30s", cs.last(t).query)
	})
	t.Run("missing", func(t *testing.T) {
		_, _, err := c.Jobs().Info("missing", nil)
		must.ErrorIs(t, err, structs.ErrNotFound)
		_, _, err = c.Jobs().Allocations("missing", nil)
		must.ErrorIs(t, err, structs.ErrNotFound)
	})
}

func TestJobs_Deregister(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"DELETE /v1/job/db": {index: "94", body: `{"Index":94}`},
	})
	cases := []struct {
		name      string
		purge     bool
		wantQuery string
	}{
		{"stop", false, ""},
		{"purge", true, "purge=true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wm, err := c.Jobs().Deregister("db", tc.purge)
			must.NoError(t, err)
			must.EqOp(t, uint64(94), wm.LastIndex)
			last := cs.last(t)
			must.EqOp(t, "DELETE", last.method)
			must.EqOp(t, tc.wantQuery, last.query)
			must.EqOp(t, "", last.body)
		})
	}
	t.Run("no ID", func(t *testing.T) {
		before := cs.count()
		_, err := c.Jobs().Deregister("", true)
		must.ErrorContains(t, err, "no job ID given")
		must.EqOp(t, before, cs.count())
	})
}
