package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_JobAndAllocRoutes_CallTheirRPC(t *testing.T) {
	meta := structs.QueryMeta{Index: 42}
	replies := map[string]any{
		"Job.List": &structs.JobListResponse{Jobs: []*structs.JobListStub{{ID: "web", Type: "service", Status: "running"}}, QueryMeta: meta},
		"Job.Register": &structs.JobRegisterResponse{
			Placed:    []*structs.AllocListStub{{ID: "a1", JobID: "web", ClientStatus: "pending"}},
			WriteMeta: structs.WriteMeta{Index: 60}},
		"Job.Get":         &structs.SingleJobResponse{Job: &structs.Job{ID: "web", Type: "service"}, QueryMeta: meta},
		"Job.Deregister":  &structs.JobDeregisterResponse{WriteMeta: structs.WriteMeta{Index: 61}},
		"Job.Allocations": &structs.JobAllocationsResponse{Allocations: []*structs.AllocListStub{{ID: "a1", JobID: "web"}}, QueryMeta: meta},
		"Alloc.List":      &structs.AllocListResponse{Allocations: []*structs.AllocListStub{{ID: "a1"}}, QueryMeta: meta},
		"Alloc.Get": &structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", TaskStates: map[string]*structs.TaskState{
			"server": {State: "running"}}}, QueryMeta: meta},
		"CSIVolume.Detach": &structs.CSIVolumeDetachResponse{Released: []string{"a1"}, WriteMeta: structs.WriteMeta{Index: 62}},
	}
	testRoutes(t, replies, []routeCase{
		{"job list", "GET", "/v1/jobs", "", "Job.List", "42", `[{"ID":"web","Namespace":"","Name":"","Type":"service","Stop":false,"Status":"running"`},
		{"job register put", "PUT", "/v1/jobs", `{"Job":{"ID":"web"}}`, "Job.Register", "60", `{"Placed":[{"ID":"a1"`},
		{"job register post", "POST", "/v1/jobs", `{"Job":{"ID":"web"}}`, "Job.Register", "60", `"Failures":[],"JobVersion":0,"Index":60}`},
		{"job get", "GET", "/v1/job/web", "", "Job.Get", "42", `{"ID":"web"`},
		{"job stop", "DELETE", "/v1/job/web", "", "Job.Deregister", "61", `{"Index":61}`},
		{"job allocations", "GET", "/v1/job/web/allocations", "", "Job.Allocations", "42", `[{"ID":"a1"`},
		{"alloc list", "GET", "/v1/allocations", "", "Alloc.List", "42", `[{"ID":"a1"`},
		{"alloc get", "GET", "/v1/allocation/a1", "", "Alloc.Get", "42", `"TaskStates":{"server":{"State":"running"`},
		{"volume detach", "DELETE", "/v1/volume/csi/data/detach?node=n1", "", "CSIVolume.Detach", "62", `{"Released":["a1"],"Index":62}`},
	})
}

func TestHandler_JobAndAllocRoutes_EmptyListsAreArrays(t *testing.T) {
	for _, target := range []string{"/v1/jobs", "/v1/allocations", "/v1/job/web/allocations"} {
		t.Run(target, func(t *testing.T) {
			rec := do(t, &fakeBackend{}, "GET", target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			must.EqOp(t, "[]\n", rec.Body.String())
		})
	}
	t.Run("register", func(t *testing.T) {
		rec := do(t, &fakeBackend{}, "PUT", "/v1/jobs", `{"Job":{"ID":"web"}}`)
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, `{"Placed":[],"Failures":[],"JobVersion":0,"Index":0}`+"\n", rec.Body.String())
	})
	t.Run("detach", func(t *testing.T) {
		rec := do(t, &fakeBackend{}, "DELETE", "/v1/volume/csi/data/detach?node=n1", "")
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, `{"Released":[],"Index":0}`+"\n", rec.Body.String())
	})
}

func TestHandler_JobAndAlloc_NilObjectIs404(t *testing.T) {
	testNilObjects(t, []nilObjectCase{
		{"job", "/v1/job/web", "Job.Get", &structs.SingleJobResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`job "web" not found; list jobs with GET /v1/jobs`},
		{"alloc", "/v1/allocation/a1", "Alloc.Get", &structs.SingleAllocResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`allocation "a1" not found; list allocations with GET /v1/allocations`},
	})
}

func TestHandler_JobRegister_Body(t *testing.T) {
	cases := []struct {
		name       string
		target     string
		body       string
		wantStatus int
		wantMsg    string
		check      func(t *testing.T, args *structs.JobRegisterRequest)
	}{
		{
			name:   "mount flags reach the RPC and the namespace comes from the query",
			target: "/v1/jobs?namespace=prod",
			body: `{"Job":{"ID":"web","Type":"service","TaskGroups":[{"Name":"g","Count":2,` +
				`"Volumes":{"data":{"Source":"data","MountOptions":{"FSType":"ext4","MountFlags":["uid=1000"]}}},` +
				`"Tasks":[{"Name":"t","Driver":"exec","KillTimeout":5000000000}]}]}}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.JobRegisterRequest) {
				must.EqOp(t, "prod", args.Namespace)
				must.EqOp(t, "prod", args.Job.Namespace)
				tg := args.Job.TaskGroups[0]
				must.EqOp(t, 2, tg.Count)
				must.Eq(t, []string{"uid=1000"}, tg.Volumes["data"].MountOptions.MountFlags)
				must.EqOp(t, 5*time.Second, tg.Tasks[0].KillTimeout)
			},
		},
		{
			name:       "a job of another namespace goes as is, for the server to refuse",
			target:     "/v1/jobs?namespace=prod",
			body:       `{"Job":{"ID":"web","Namespace":"dev"}}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.JobRegisterRequest) {
				must.EqOp(t, "prod", args.Namespace)
				must.EqOp(t, "dev", args.Job.Namespace)
			},
		},
		{
			name:       "without ?namespace= the request is for the job's namespace",
			target:     "/v1/jobs",
			body:       `{"Job":{"ID":"web","Namespace":"dev"}}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.JobRegisterRequest) {
				must.EqOp(t, "dev", args.Namespace)
				must.EqOp(t, "dev", args.Job.Namespace)
			},
		},
		{
			name:       "forwarded in the body is ignored",
			target:     "/v1/jobs",
			body:       `{"Job":{"ID":"web"},"Forwarded":true}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.JobRegisterRequest) {
				must.False(t, args.Forwarded)
			},
		},
		{name: "no job", target: "/v1/jobs", body: `{}`, wantStatus: 400,
			wantMsg: `request body has no job; send {"Job": {"ID": "web", "TaskGroups": [...]}}`},
		{name: "job without an ID", target: "/v1/jobs", body: `{"Job":{"Type":"batch"}}`, wantStatus: 400,
			wantMsg: `request body's job has no ID`},
		{name: "empty body", target: "/v1/jobs", body: ``, wantStatus: 400,
			wantMsg: `request body is empty; want a JSON object {"Job": {...}}`},
		{name: "wrong type", target: "/v1/jobs", body: `{"Job":{"ID":"web","TaskGroups":[{"Count":"two"}]}}`, wantStatus: 400,
			wantMsg: `field Job.TaskGroups.Count must be int`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "PUT", tc.target, tc.body)
			must.EqOp(t, tc.wantStatus, rec.Code, must.Sprint(rec.Body.String()))
			if tc.wantMsg != "" {
				mustBadRequest(t, rec, b, tc.wantMsg)
				return
			}
			tc.check(t, b.last(t).args.(*structs.JobRegisterRequest))
		})
	}
}

func TestHandler_JobDeregister_Purge(t *testing.T) {
	cases := []struct {
		target    string
		wantPurge bool
	}{
		{"/v1/job/web?namespace=prod", false},
		{"/v1/job/web?namespace=prod&purge=true", true},
		{"/v1/job/web?namespace=prod&purge", true},
		{"/v1/job/web?namespace=prod&purge=false", false},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "DELETE", tc.target, "")
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			args := b.last(t).args.(*structs.JobDeregisterRequest)
			must.EqOp(t, "web", args.JobID)
			must.EqOp(t, tc.wantPurge, args.Purge)
			must.EqOp(t, "prod", args.Namespace)
		})
	}
	t.Run("bad purge", func(t *testing.T) {
		b := &fakeBackend{}
		mustBadRequest(t, do(t, b, "DELETE", "/v1/job/web?purge=please", ""), b, `purge="please" must be true or false`)
	})
}

func TestHandler_JobAllocations_Blocking(t *testing.T) {
	b := &fakeBackend{}
	rec := do(t, b, "GET", "/v1/job/web/allocations?index=17&wait=10s&stale", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	args := b.last(t).args.(*structs.JobSpecificRequest)
	must.EqOp(t, "web", args.JobID)
	must.Eq(t, structs.QueryOptions{MinQueryIndex: 17, MaxQueryTime: 10 * time.Second, AllowStale: true}, args.QueryOptions)
}

func TestHandler_JobAndAllocRoutes_WrongMethod(t *testing.T) {
	cases := []struct {
		method, target, wantAllow string
	}{
		{"DELETE", "/v1/jobs", "GET, POST, PUT"},
		{"PUT", "/v1/job/web", "DELETE, GET"},
		{"POST", "/v1/job/web/allocations", "GET"},
		{"DELETE", "/v1/allocation/a1", "GET"},
		{"POST", "/v1/client/fs/logs/a1", "GET"},
		{"GET", "/v1/volume/csi/data/detach", "DELETE"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			mustNotAllowed(t, tc.method, tc.target, tc.wantAllow)
		})
	}
}

// fuzzJobMaxCount stands for the servers' job_max_count (its default).
const fuzzJobMaxCount = 10_000

// FuzzJobRegisterBody decodes a job register body as the handler does,
// then takes the job in as the server does (Job.ForRegister). It must never panic; it must either refuse
// the body with a BadRequest (or 413) or hand on a job that is whole:
// no null entries, valid names, bounded counts, and one that survives a
// copy and the msgpack round trip of a raft entry. Seeds are in
// testdata/fuzz/FuzzJobRegisterBody.
func FuzzJobRegisterBody(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("PUT", "/v1/jobs?namespace=prod", bytes.NewReader(body))
		args, err := decodeJobRegister(httptest.NewRecorder(), req)
		if err != nil {
			var mbe *http.MaxBytesError
			if !errors.As(err, &mbe) {
				must.ErrorIs(t, err, structs.ErrBadRequest)
			}
			return
		}
		job, err := args.Job.ForRegister(args.RequestNamespace(), fuzzJobMaxCount) // as the server does
		if err != nil {
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.Less(t, 8192, len(err.Error()), must.Sprint("errors stay short"))
			return
		}
		mustBeWhole(t, job)
		must.Eq(t, job, job.Copy())

		buf, err := structs.Encode(structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job})
		must.NoError(t, err)
		var out structs.PlanApplyRequest
		must.NoError(t, structs.Decode(buf[1:], &out))
		must.NoError(t, out.Job.Validate(), must.Sprint("a raft entry's job stays valid"))
	})
}

// mustBeWhole checks what the servers rely on in a job Validate accepted.
func mustBeWhole(t *testing.T, job *structs.Job) {
	t.Helper()
	must.NoError(t, structs.ValidateName(structs.NameJobID, job.ID))
	must.SliceNotEmpty(t, job.TaskGroups)
	total := 0
	for _, tg := range job.TaskGroups {
		must.NotNil(t, tg)
		must.NoError(t, structs.ValidateName(structs.NameGroup, tg.Name))
		must.Between(t, 0, tg.Count, fuzzJobMaxCount)
		total += tg.Count
		for alias, v := range tg.Volumes {
			must.NotNil(t, v, must.Sprint(alias))
			must.NoError(t, structs.ValidateName(structs.NameVolumeID, v.Source))
		}
		_ = tg.WritesVolumes()
		must.SliceNotEmpty(t, tg.Tasks)
		for _, task := range tg.Tasks {
			must.NotNil(t, task)
			must.NoError(t, structs.ValidateName(structs.NameTask, task.Name))
			must.NonNegative(t, task.KillTimeout)
			if r := task.Restart; r != nil && r.Attempts > 0 {
				// At most one restart a second.
				must.GreaterEq(t, time.Second, r.Delay)
				must.LessEq(t, r.Interval/r.Delay, time.Duration(r.Attempts))
			}
			for _, vm := range task.VolumeMounts {
				must.NotNil(t, vm)
				must.MapContainsKey(t, tg.Volumes, vm.Volume)
			}
		}
	}
	must.LessEq(t, fuzzJobMaxCount, total)
	_ = job.CSIPluginIDs()
}

// TestJobRegisterBody_Seeds: the fuzz seeds say what they are meant to:
// the valid ones pass, each of the others is refused for its reason.
func TestJobRegisterBody_Seeds(t *testing.T) {
	want := map[string]string{
		"valid":         "",
		"system_plugin": "",
		"null_tasks":    `group "g": task 0 is null`,
		"null_group":    "group 0 is null",
		"null_mount":    `task "t": volume_mount 0 is null`,
		"null_volume":   `volume "a" is null`,
		"huge_count":    "count 2147483648 is over this cluster's limit of 10000",
		"unknown_field": `unknown field "Counts"; did you mean "Count"?`,
		"nul_id":        `job ID "we\x00b\r" must not contain '\x00'`,
		"dotdot_task":   `task name ".." must not start with '.'`,
		"fast_restart":  "restart: delay 0s is too short",
		"negative_kill": "kill_timeout -1ns must not be negative",
		"trailing_data": "found more data after it",
		"cut_short":     "ends early",
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzJobRegisterBody")
	entries, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.EqOp(t, len(want), len(entries))
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			must.NoError(t, err)
			header, value, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
			must.EqOp(t, "go test fuzz v1", header)
			body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(value, "[]byte("), ")"))
			must.NoError(t, err)

			req := httptest.NewRequest("PUT", "/v1/jobs", strings.NewReader(body))
			args, err := decodeJobRegister(httptest.NewRecorder(), req)
			if err == nil {
				_, err = args.Job.ForRegister(args.RequestNamespace(), fuzzJobMaxCount)
			}
			w, ok := want[e.Name()]
			must.True(t, ok, must.Sprintf("seed %s has no expectation here", e.Name()))
			if w == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), w)
		})
	}
}
