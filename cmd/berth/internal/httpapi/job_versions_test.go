package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_JobVersionRoutes(t *testing.T) {
	meta := structs.QueryMeta{Index: 42}
	replies := map[string]any{
		"Job.Plan": &structs.JobPlanResponse{Changed: true, JobVersion: 1,
			Groups: []*structs.GroupChange{{TaskGroup: "g", Replace: 1}}},
		"Job.Versions": &structs.JobVersionsResponse{Versions: []*structs.Job{{ID: "web", Version: 1}, {ID: "web"}}, QueryMeta: meta},
		"Job.Revert":   &structs.JobRegisterResponse{JobVersion: 2, WriteMeta: structs.WriteMeta{Index: 63}},
	}
	testRoutes(t, replies, []routeCase{
		{"plan", "PUT", "/v1/job/web/plan", `{"Job":{"ID":"web"}}`, "Job.Plan", "",
			`{"Changed":true,"JobVersion":1,"Groups":[{"TaskGroup":"g","Place":0,"Stop":0,"Replace":1`},
		{"versions", "GET", "/v1/job/web/versions", "", "Job.Versions", "42", `{"Versions":[{"ID":"web"`},
		{"revert", "PUT", "/v1/job/web/revert", `{"JobVersion":0}`, "Job.Revert", "63", `"JobVersion":2,"Index":63}`},
	})
}

func TestHandler_JobVersionRoutes_BadRequests(t *testing.T) {
	cases := []struct {
		name, method, target, body, want string
	}{
		{"plan of another job", "PUT", "/v1/job/web/plan", `{"Job":{"ID":"db"}}`, `the path names job "web" but the body's job is "db"`},
		{"plan without a job", "PUT", "/v1/job/web/plan", `{}`, `request body has no job`},
		{"revert without a version", "PUT", "/v1/job/web/revert", `{}`, `request body has no JobVersion; send {"JobVersion": N} (see berth job history web)`},
		{"revert with a string", "PUT", "/v1/job/web/revert", `{"JobVersion":"2"}`, `JobVersion`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: map[string]any{}}
			rec := do(t, b, tc.method, tc.target, tc.body)
			must.EqOp(t, http.StatusBadRequest, rec.Code, must.Sprint(rec.Body.String()))
			var e errorBody
			must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			must.StrContains(t, e.Message, tc.want)
			must.SliceEmpty(t, b.calls, must.Sprint("nothing reaches the servers"))
		})
	}
}
