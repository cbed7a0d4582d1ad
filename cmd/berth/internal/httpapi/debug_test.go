package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// get fetches path with token (none when "") and returns the status and
// the body.
func get(t *testing.T, base, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	must.NoError(t, err)
	if token != "" {
		req.Header.Set(headerToken, token)
	}
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestWithDebug_ACLs: with ACLs on, the profiles need a management token,
// checked by a real server; the API behind is served as before.
func TestWithDebug_ACLs(t *testing.T) {
	cluster := servertest.Cluster(t, 1, func(cfg *server.Config) { cfg.ACLEnabled = true })
	backend := cluster.Servers[0].Server
	srv := httptest.NewServer(WithDebug(New(backend, testLogger(t)), backend))
	t.Cleanup(srv.Close)
	anon, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)
	boot, _, err := anon.ACLBootstrap()
	must.NoError(t, err)
	mgmt := anon.WithToken(boot.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "readonly", Rules: "node {\n  policy = \"read\"\n}\n"})
	must.NoError(t, err)
	made, _, err := mgmt.ACLTokens().Create(&structs.ACLToken{Name: "ro", Type: structs.ACLTokenTypeClient, Policies: []string{"readonly"}})
	must.NoError(t, err)

	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusForbidden},
		{"a client token", made.SecretID, http.StatusForbidden},
		{"an unknown token", "not-a-token", http.StatusForbidden},
		{"the management token", boot.SecretID, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, srv.URL, "/debug/pprof/heap?debug=1", tc.token)
			must.EqOp(t, tc.want, status, must.Sprint(body))
			if tc.want == http.StatusOK {
				must.StrContains(t, body, "heap profile")
			} else {
				must.StrContains(t, body, "permission denied")
			}
		})
	}
	status, body := get(t, srv.URL, "/v1/status/leader", "")
	must.EqOp(t, http.StatusOK, status, must.Sprint(body))
}

// TestWithDebug_NoACLs: with ACLs off on the servers the profiles are
// open, and only the debug routes are taken over.
func TestWithDebug_NoACLs(t *testing.T) {
	backend := servertest.Cluster(t, 1).Servers[0].Server
	srv := httptest.NewServer(WithDebug(New(backend, testLogger(t)), backend))
	t.Cleanup(srv.Close)
	status, body := get(t, srv.URL, "/debug/pprof/", "")
	must.EqOp(t, http.StatusOK, status, must.Sprint(body))
	must.True(t, strings.Contains(body, "goroutine"), must.Sprint(body))
	status, body = get(t, srv.URL, "/v1/no-such-route", "")
	must.EqOp(t, http.StatusNotFound, status, must.Sprint("the API's own 404 answers the rest: "+body))
}
