package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// readOnlyEverywhere reads every scope and writes none.
const readOnlyEverywhere = `namespace "default" {
  policy = "read"
}
node {
  policy = "read"
}
plugin {
  policy = "read"
}
operator {
  policy = "read"
}
`

// TestACL_RealServer_RouteWalk_ReadOnlyAndManagement walks the route table
// against a real server with ACLs on, with a token that may read every
// scope and a management token: the read-only token is refused (403) on
// every write and on the ACL administration reads, and is never refused a
// read; the management token is never refused. A new route must be
// classified by its method (or listed below) to pass.
func TestACL_RealServer_RouteWalk_ReadOnlyAndManagement(t *testing.T) {
	anon, srv := newACLServer(t)
	boot, _, err := anon.ACLBootstrap()
	must.NoError(t, err)
	mgmt := anon.WithToken(boot.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "reader", Rules: readOnlyEverywhere})
	must.NoError(t, err)
	made, _, err := mgmt.ACLTokens().Create(&structs.ACLToken{Name: "reader", Policies: []string{"reader"}})
	must.NoError(t, err)

	// Reads only a management token may make: the tokens and every policy.
	adminReads := map[string]bool{
		"GET /v1/acl/tokens":             true,
		"GET /v1/acl/token/{accessor}":   true,
		"GET /v1/acl/policy/{name}":      true,
		"GET /v1/acl/policies":           false, // lists only the caller's own policies
		"GET /v1/acl/token/self":         false,
		"GET /v1/client/fs/logs/{alloc}": true, // read-logs is a write capability
		"GET /v1/operator/snapshot":      true, // the whole state: a management token only
	}
	h := New(nil, nil).(*handler)
	for _, rt := range h.table {
		for _, method := range rt.methods {
			key := method + " " + rt.pattern
			if strings.HasSuffix(rt.pattern, "/acl/bootstrap") {
				continue // done above: 409 for everyone now
			}
			sample := routeSamples[key]
			call := func(token string) (int, errorBody) {
				var body io.Reader
				if sample.body != "" {
					body = strings.NewReader(sample.body)
				}
				req, err := http.NewRequest(method, srv.URL+routeTarget(rt.pattern)+sample.query, body)
				must.NoError(t, err)
				req.Header.Set("X-Berth-Token", token)
				resp, err := http.DefaultClient.Do(req)
				must.NoError(t, err)
				defer resp.Body.Close()
				var e errorBody
				_ = json.NewDecoder(resp.Body).Decode(&e)
				return resp.StatusCode, e
			}
			t.Run(key, func(t *testing.T) {
				status, e := call(made.SecretID)
				if method != http.MethodGet || adminReads[key] {
					must.EqOp(t, http.StatusForbidden, status, must.Sprintf("read-only token: %v", e))
					must.EqOp(t, structs.CodePermissionDenied, e.Code)
				} else {
					must.NotEq(t, http.StatusForbidden, status, must.Sprintf("read-only token refused a read: %v", e))
				}
				status, e = call(boot.SecretID)
				must.NotEq(t, http.StatusForbidden, status, must.Sprintf("management token refused: %v", e))
			})
		}
	}
}
