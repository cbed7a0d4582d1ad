package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// TestACL_RealServer_JobRegisterOnlyInTheTokensNamespace: a token that
// may write only in dev registers a job in dev and nowhere else, whatever
// namespace the body names; a job that names another namespace than
// ?namespace= is a 400 naming both. Without ?namespace= the request is for
// the job's own namespace (the CLI sends none), checked as such.
func TestACL_RealServer_JobRegisterOnlyInTheTokensNamespace(t *testing.T) {
	anon, srv := newACLServer(t)
	boot, _, err := anon.ACLBootstrap()
	must.NoError(t, err)
	mgmt := anon.WithToken(boot.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "dev", Rules: "namespace \"dev\" {\n  policy = \"write\"\n}\n"})
	must.NoError(t, err)
	made, _, err := mgmt.ACLTokens().Create(&structs.ACLToken{Name: "dev", Policies: []string{"dev"}})
	must.NoError(t, err)

	const job = `{"Job": {"ID": "web", %s"Type": "service", "TaskGroups": [{"Name": "g", "Count": 1,
  "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "/bin/true"}}]}]}}`
	cases := []struct {
		name, query, body string
		status            int
		msg               string
		storedIn          string // "" for nowhere
	}{
		{"another namespace in the body", "?namespace=dev", `"Namespace": "prod", `, http.StatusBadRequest,
			`job \"web\" is in namespace \"prod\" but the request is for namespace \"dev\"; send it with ?namespace=prod`, ""},
		{"the body's namespace, no query", "", `"Namespace": "prod", `, http.StatusForbidden,
			`token lacks capability \"submit-job\" in namespace \"prod\"`, ""},
		{"no namespace in the body", "?namespace=dev", "", http.StatusOK, "", "dev"},
		{"the query's namespace in the body", "?namespace=dev", `"Namespace": "dev", `, http.StatusOK, "", "dev"},
		{"the body's namespace is the request's", "", `"Namespace": "dev", `, http.StatusOK, "", "dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/v1/jobs"+tc.query,
				strings.NewReader(strings.Replace(job, "%s", tc.body, 1)))
			must.NoError(t, err)
			req.Header.Set(headerToken, made.SecretID)
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			must.NoError(t, resp.Body.Close())
			must.NoError(t, err)
			must.EqOp(t, tc.status, resp.StatusCode, must.Sprint(string(body)))
			must.StrContains(t, string(body), tc.msg)

			for _, ns := range []string{"dev", "prod", structs.DefaultNamespace} {
				_, _, err := mgmt.Jobs().Info("web", &api.QueryOptions{Namespace: ns})
				if ns == tc.storedIn {
					must.NoError(t, err, must.Sprintf("job in namespace %q", ns))
				} else {
					must.ErrorIs(t, err, structs.ErrNotFound, must.Sprintf("job in namespace %q", ns))
				}
			}
			if tc.storedIn != "" {
				var out json.RawMessage
				_, err := mgmt.Raw().Write(http.MethodDelete, "/v1/job/web", map[string][]string{
					"namespace": {tc.storedIn}, "purge": {"true"}}, nil, &out)
				must.NoError(t, err)
			}
		})
	}
}
