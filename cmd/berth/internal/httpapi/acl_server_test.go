package httpapi

import (
	"encoding/json"
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

// newACLServer starts one real server with ACLs on and serves its HTTP API;
// it returns an anonymous api client of it.
func newACLServer(t *testing.T) (*api.Client, *httptest.Server) {
	t.Helper()
	cluster := servertest.Cluster(t, 1, func(cfg *server.Config) { cfg.ACLEnabled = true })
	srv := httptest.NewServer(New(cluster.Servers[0].Server, testLogger(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)
	return c, srv
}

// TestACL_RealServer_Workflow: bootstrap, a policy, a client token and
// what each caller may do, through the HTTP API and the api client to a
// real server.
func TestACL_RealServer_Workflow(t *testing.T) {
	anon, _ := newACLServer(t)

	boot, _, err := anon.ACLBootstrap()
	must.NoError(t, err)
	must.NotEq(t, "", boot.SecretID)
	must.EqOp(t, structs.ACLTokenTypeManagement, boot.Type)
	_, _, err = anon.ACLBootstrap()
	must.ErrorIs(t, err, structs.ErrConflict, must.Sprint("a second bootstrap"))

	_, _, err = anon.ACLTokens().List(nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	var ae *api.Error
	must.ErrorAs[*api.Error](t, err, &ae)
	must.EqOp(t, http.StatusForbidden, ae.StatusCode)

	mgmt := anon.WithToken(boot.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "readonly", Description: "dashboards",
		Rules: "node {\n  policy = \"read\"\n}\n"})
	must.NoError(t, err)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "bad", Rules: "nod {\n}\n"})
	must.ErrorIs(t, err, structs.ErrBadRequest, must.Sprint("rules the servers cannot parse"))

	made, _, err := mgmt.ACLTokens().Create(&structs.ACLToken{Name: "dash", Policies: []string{"readonly"}})
	must.NoError(t, err)
	must.NotEq(t, "", made.SecretID)
	ro := anon.WithToken(made.SecretID)

	self, _, err := ro.ACLTokens().Self(nil)
	must.NoError(t, err)
	must.EqOp(t, made.AccessorID, self.AccessorID)
	must.EqOp(t, "", self.SecretID)
	_, err = ro.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "mine", Rules: "node {\n  policy = \"write\"\n}\n"})
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("a read-only token writes a policy"))
	_, _, err = ro.Nodes().List(nil)
	must.NoError(t, err, must.Sprint("node read is what readonly allows"))

	tokens, _, err := mgmt.ACLTokens().List(nil)
	must.NoError(t, err)
	ids := make([]string, len(tokens))
	for i, tk := range tokens {
		ids[i] = tk.AccessorID
	}
	must.SliceContainsAll(t, []string{boot.AccessorID, made.AccessorID}, ids)

	// No answer but create's shows a secret, or its hash.
	for _, target := range []string{"/v1/acl/tokens", "/v1/acl/token/" + made.AccessorID, "/v1/acl/token/self"} {
		var raw json.RawMessage
		_, err := mgmt.Raw().Query(target, nil, &raw, nil)
		must.NoError(t, err, must.Sprint(target))
		must.StrNotContains(t, string(raw), "Secret", must.Sprint(target))
		must.StrNotContains(t, string(raw), made.SecretID, must.Sprint(target))
	}

	updated, _, err := mgmt.ACLTokens().Update(&structs.ACLToken{AccessorID: made.AccessorID, Name: "dash-2",
		Type: structs.ACLTokenTypeClient, Policies: []string{"readonly"}})
	must.NoError(t, err)
	must.EqOp(t, "dash-2", updated.Name)
	must.EqOp(t, "", updated.SecretID)

	_, err = mgmt.ACLTokens().Delete(made.AccessorID)
	must.NoError(t, err)
	_, _, err = ro.ACLTokens().Self(nil)
	must.ErrorIs(t, err, structs.ErrNotFound, must.Sprint("a deleted token is anonymous"))
	_, _, err = ro.Nodes().List(nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("a deleted token reads nothing"))

	policy, _, err := mgmt.ACLPolicies().Info("readonly", nil)
	must.NoError(t, err)
	must.EqOp(t, "dashboards", policy.Description)
	_, err = mgmt.ACLPolicies().Delete("readonly")
	must.NoError(t, err)
	_, _, err = mgmt.ACLPolicies().Info("readonly", nil)
	must.ErrorIs(t, err, structs.ErrNotFound)
}

// TestACL_RealServer_EveryRouteRefusesAnonymous walks the route table
// against a real server with ACLs on and no token: every route but the
// open ones is a 403 PermissionDenied. Open: the agent's runtime metrics,
// the raft leader and peers, bootstrap (no token exists before it) and
// token self (an anonymous caller learns only that it has no token: 404).
func TestACL_RealServer_EveryRouteRefusesAnonymous(t *testing.T) {
	_, srv := newACLServer(t)
	h := New(nil, nil).(*handler)
	open := map[string]bool{
		"GET /v1/metrics":        true,
		"GET /v1/status/leader":  true,
		"GET /v1/status/peers":   true,
		"POST /v1/acl/bootstrap": true,
		"PUT /v1/acl/bootstrap":  true,
		"GET /v1/acl/token/self": true,
	}
	for _, rt := range h.table {
		for _, method := range rt.methods {
			key := method + " " + rt.pattern
			if open[key] {
				continue
			}
			sample := routeSamples[key]
			t.Run(key, func(t *testing.T) {
				var body io.Reader
				if sample.body != "" {
					body = strings.NewReader(sample.body)
				}
				req, err := http.NewRequest(method, srv.URL+routeTarget(rt.pattern)+sample.query, body)
				must.NoError(t, err)
				resp, err := http.DefaultClient.Do(req)
				must.NoError(t, err)
				defer resp.Body.Close()
				var e errorBody
				must.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
				must.EqOp(t, http.StatusForbidden, resp.StatusCode, must.Sprint(e))
				must.EqOp(t, structs.CodePermissionDenied, e.Code)
			})
		}
	}
}
