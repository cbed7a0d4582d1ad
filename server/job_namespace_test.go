package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// runnableJob is a valid job "web" in namespace ns.
func runnableJob(ns string) *structs.Job {
	job := statetest.Job("web")
	job.Namespace = ns
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	return job
}

// TestJob_Register_OnlyInTheRequestNamespace: submit-job is checked in
// the request's namespace, so the job goes there and nowhere else. A job
// that names another namespace is a 400 naming both; a job that names
// none takes the request's.
func TestJob_Register_OnlyInTheRequestNamespace(t *testing.T) {
	s, mgmt := aclServer(t)
	dev := makeToken(t, s, mgmt, "dev-writer", "namespace \"dev\" {\n  policy = \"write\"\n}\n")

	cases := []struct {
		name, reqNS, jobNS, token string
		want                      error
		msg                       string
		storedIn                  string // the namespace the job is then in; "" for none
	}{
		{name: "another namespace in the body", reqNS: "dev", jobNS: "prod", token: dev, want: structs.ErrBadRequest,
			msg: `job "web" is in namespace "prod" but the request is for namespace "dev"; send it with ?namespace=prod`},
		{name: "another namespace, management too", reqNS: "dev", jobNS: "prod", token: mgmt, want: structs.ErrBadRequest,
			msg: `is in namespace "prod" but the request is for namespace "dev"`},
		{name: "no request namespace is default", jobNS: "prod", token: mgmt, want: structs.ErrBadRequest,
			msg: `is in namespace "prod" but the request is for namespace "default"`},
		{name: "the other namespace asked for", reqNS: "prod", jobNS: "prod", token: dev, want: structs.ErrPermissionDenied,
			msg: `namespace "prod"`},
		{name: "no namespace in the body", reqNS: "dev", token: dev, storedIn: "dev"},
		{name: "the same namespace", reqNS: "dev", jobNS: "dev", token: dev, storedIn: "dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := runnableJob(tc.jobNS)
			var resp structs.JobRegisterResponse
			err := callAs(t, s, tc.token, "Job.Register", &structs.JobRegisterRequest{Job: job,
				WriteRequest: structs.WriteRequest{Namespace: tc.reqNS}}, &resp)
			if tc.want != nil {
				must.ErrorIs(t, err, tc.want)
				must.StrContains(t, err.Error(), tc.msg)
			} else {
				must.NoError(t, err)
			}
			for _, ns := range []string{"dev", "prod", structs.DefaultNamespace} {
				stored, err := s.State().JobByID(nil, ns, "web")
				must.NoError(t, err)
				if ns == tc.storedIn {
					must.NotNil(t, stored, must.Sprintf("job in namespace %q", ns))
					must.EqOp(t, ns, stored.Namespace)
				} else {
					must.Nil(t, stored, must.Sprintf("job in namespace %q", ns))
				}
			}
			if tc.storedIn != "" {
				must.NoError(t, callAs(t, s, tc.token, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", Purge: true,
					WriteRequest: structs.WriteRequest{Namespace: tc.storedIn}}, &structs.JobDeregisterResponse{}))
			}
		})
	}
}

// TestJob_ReadsAndStopInTheRequestNamespace: reading or stopping a job
// acts in the request's namespace, the one the token is checked in: a
// dev token neither reads nor stops prod's job of the same ID.
func TestJob_ReadsAndStopInTheRequestNamespace(t *testing.T) {
	s, mgmt := aclServer(t)
	dev := makeToken(t, s, mgmt, "dev-writer", "namespace \"dev\" {\n  policy = \"write\"\n}\n")
	for _, ns := range []string{"dev", "prod"} {
		job := runnableJob(ns)
		must.NoError(t, callAs(t, s, mgmt, "Job.Register", &structs.JobRegisterRequest{Job: job,
			WriteRequest: structs.WriteRequest{Namespace: ns}}, &structs.JobRegisterResponse{}))
	}

	var got structs.SingleJobResponse
	must.NoError(t, callAs(t, s, dev, "Job.Get", &structs.JobSpecificRequest{JobID: "web",
		QueryOptions: structs.QueryOptions{Namespace: "dev"}}, &got))
	must.NotNil(t, got.Job)
	must.EqOp(t, "dev", got.Job.Namespace)
	must.ErrorIs(t, callAs(t, s, dev, "Job.Get", &structs.JobSpecificRequest{JobID: "web",
		QueryOptions: structs.QueryOptions{Namespace: "prod"}}, &structs.SingleJobResponse{}), structs.ErrPermissionDenied)
	must.ErrorIs(t, callAs(t, s, dev, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web",
		WriteRequest: structs.WriteRequest{Namespace: "prod"}}, &structs.JobDeregisterResponse{}), structs.ErrPermissionDenied)

	must.NoError(t, callAs(t, s, dev, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web",
		WriteRequest: structs.WriteRequest{Namespace: "dev"}}, &structs.JobDeregisterResponse{}))
	for ns, stopped := range map[string]bool{"dev": true, "prod": false} {
		job, err := s.State().JobByID(nil, ns, "web")
		must.NoError(t, err)
		must.NotNil(t, job)
		must.EqOp(t, stopped, job.Stop, must.Sprintf("job in namespace %q", ns))
	}
}
