package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const mgmtToken = "mgmt"

// aclBackend stands in for servers with ACLs on: it refuses every call
// whose AuthToken is not the management token, as the servers refuse a
// caller without the capability, and answers the others from fakeBackend.
type aclBackend struct {
	fakeBackend

	mu     sync.Mutex
	tokens []string // the AuthToken of each call, in order
}

var _ Backend = (*aclBackend)(nil)

func (b *aclBackend) RPC(ctx context.Context, method string, args, reply any) error {
	token := args.(interface{ GetAuthToken() string }).GetAuthToken()
	b.mu.Lock()
	b.tokens = append(b.tokens, token)
	b.mu.Unlock()
	if token != mgmtToken {
		return structs.NewError(structs.CodePermissionDenied, "permission denied: %s needs a management token", method)
	}
	if method == "Event.Next" && b.fakeBackend.count() > 0 {
		// The event stream polls until its caller goes away: its second
		// poll ends it (with an error line, after a 200).
		return structs.NewError(structs.CodeUnavailable, "fake: the event stream ends here")
	}
	return b.fakeBackend.RPC(ctx, method, args, reply)
}

func (b *aclBackend) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.tokens...)
}

// openRoutes answer without any RPC, so no token is checked: the agent's
// own runtime numbers. Add a route here only if it reads nothing of the
// cluster.
var openRoutes = map[string]bool{
	"GET /v1/metrics": true,
}

// routeSample is what a route needs in its query and body to get past its
// own checks to its RPC.
type routeSample struct{ query, body string }

// routeSamples are keyed by "METHOD pattern"; a route not listed is sent
// with no query and no body.
var routeSamples = map[string]routeSample{
	"PUT /v1/volume/csi/{id}":           {body: `{"Volumes":[{"PluginID":"hp"}]}`},
	"PUT /v1/volume/csi/{id}/create":    {body: `{"Volumes":[{"PluginID":"hp"}]}`},
	"PUT /v1/volume/csi/{id}/claim":     {body: `{"AllocationID":"a1","Mode":"write"}`},
	"POST /v1/volume/csi/{id}/claim":    {body: `{"AllocationID":"a1","Mode":"write"}`},
	"DELETE /v1/volume/csi/{id}/detach": {query: "?node=n1"},
	"POST /v1/volumes/snapshot":         {body: `{"VolumeID":"data"}`},
	"DELETE /v1/volumes/snapshot":       {query: "?plugin_id=hp&snapshot_id=s1"},
	"GET /v1/volumes/external":          {query: "?plugin_id=hp"},
	"PUT /v1/jobs":                      {body: `{"Job":{"ID":"web"}}`},
	"POST /v1/jobs":                     {body: `{"Job":{"ID":"web"}}`},
	"PUT /v1/job/{id}/plan":             {body: `{"Job":{"ID":"x-id"}}`},
	"POST /v1/job/{id}/plan":            {body: `{"Job":{"ID":"x-id"}}`},
	"PUT /v1/job/{id}/revert":           {body: `{"JobVersion":0}`},
	"POST /v1/job/{id}/revert":          {body: `{"JobVersion":0}`},
	"GET /v1/client/fs/logs/{alloc}":    {query: "?task=t"},
	"PUT /v1/acl/token":                 {body: `{"Name":"deploy","Type":"client","Policies":["deploy"]}`},
	"POST /v1/acl/token":                {body: `{"Name":"deploy","Type":"client","Policies":["deploy"]}`},
	"PUT /v1/acl/token/{accessor}":      {body: `{"Name":"deploy"}`},
	"POST /v1/acl/token/{accessor}":     {body: `{"Name":"deploy"}`},
	"PUT /v1/acl/policy/{name}":         {body: `{"Rules":"node { policy = \"read\" }"}`},
	"POST /v1/acl/policy/{name}":        {body: `{"Rules":"node { policy = \"read\" }"}`},
	"PUT /v1/operator/snapshot":         {body: "\x1f\x8b gzip magic, then not a snapshot"},
	"PUT /v1/node/{id}/drain":           {body: `{"DrainSpec":{"Deadline":3600000000000}}`},
	"POST /v1/node/{id}/drain":          {body: `{"DrainSpec":null}`},
	"PUT /v1/node/{id}/eligibility":     {body: `{"Eligibility":"ineligible"}`},
	"POST /v1/node/{id}/eligibility":    {body: `{"Eligibility":"eligible"}`},
}

// routeTarget makes a request path of a pattern: each {name} becomes
// "x-name".
func routeTarget(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = "x-" + strings.Trim(p, "{}.")
		}
	}
	return strings.Join(parts, "/")
}

// serveToken serves one request with token in X-Berth-Token ("" for no
// header).
func serveToken(t *testing.T, b Backend, method, target, body, token string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if token != "" {
		req.Header.Set(headerToken, token)
	}
	rec := httptest.NewRecorder()
	New(b, testLogger(t)).ServeHTTP(rec, req)
	return rec
}

// TestHandler_RouteTable_EveryRouteCarriesTheToken walks every route and
// method routes() registers: without a token, or with one the servers do
// not accept, each reaches its RPC with that token and answers the
// refusal as a 403 JSON body; with the management token it is let
// through. A route that bypassed the token (an RPC without it, a
// context.Background(), a request type without AuthToken) fails here.
func TestHandler_RouteTable_EveryRouteCarriesTheToken(t *testing.T) {
	h := New(&fakeBackend{}, nil).(*handler)
	must.SliceNotEmpty(t, h.table)
	seen := map[string]bool{}
	for _, rt := range h.table {
		for _, method := range rt.methods {
			key := method + " " + rt.pattern
			seen[key] = true
			sample := routeSamples[key]
			target := routeTarget(rt.pattern) + sample.query
			t.Run(key, func(t *testing.T) {
				if openRoutes[key] {
					b := &aclBackend{}
					rec := serveToken(t, b, method, target, sample.body, "")
					must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
					must.SliceEmpty(t, b.seen())
					return
				}
				for _, token := range []string{"", "not-a-token"} {
					b := &aclBackend{}
					rec := serveToken(t, b, method, target, sample.body, token)
					must.SliceNotEmpty(t, b.seen(), must.Sprintf(
						"%s answered %d %s before any RPC; give it a request that reaches its RPC in routeSamples",
						key, rec.Code, rec.Body.String()))
					must.Eq(t, []string{token}, b.seen()[:1])
					must.EqOp(t, http.StatusForbidden, rec.Code, must.Sprint(rec.Body.String()))
					must.EqOp(t, "application/json", rec.Header().Get("Content-Type"))
					e := decodeError(t, rec)
					must.EqOp(t, structs.CodePermissionDenied, e.Code)
					must.StrContains(t, e.Message, "needs a management token")
				}
				b := &aclBackend{fakeBackend: fakeBackend{replies: aclReplies()}}
				rec := serveToken(t, b, method, target, sample.body, mgmtToken)
				must.NotEq(t, http.StatusForbidden, rec.Code, must.Sprint(rec.Body.String()))
				must.Less(t, 500, rec.Code, must.Sprint(rec.Body.String()))
				must.SliceContains(t, b.seen(), mgmtToken)
			})
		}
	}
	// The samples name only routes that exist, so they cannot rot.
	for key := range routeSamples {
		must.True(t, seen[key], must.Sprintf("routeSamples names %q, which routes() does not register", key))
	}
	for key := range openRoutes {
		must.True(t, seen[key], must.Sprintf("openRoutes names %q, which routes() does not register", key))
	}
}

// TestHandler_RouteTable_ListsTheACLRoutes: the walk above covers the ACL
// routes of the contract.
func TestHandler_RouteTable_ListsTheACLRoutes(t *testing.T) {
	h := New(&fakeBackend{}, nil).(*handler)
	got := map[string][]string{}
	for _, rt := range h.table {
		got[rt.pattern] = rt.methods
	}
	want := map[string][]string{
		"/v1/acl/bootstrap":        {"POST", "PUT"},
		"/v1/acl/tokens":           {"GET"},
		"/v1/acl/token":            {"POST", "PUT"},
		"/v1/acl/token/self":       {"GET"},
		"/v1/acl/token/{accessor}": {"DELETE", "GET", "POST", "PUT"},
		"/v1/acl/policies":         {"GET"},
		"/v1/acl/policy/{name}":    {"DELETE", "GET", "POST", "PUT"},
	}
	for pattern, methods := range want {
		must.Eq(t, methods, got[pattern], must.Sprint(pattern))
	}
}

func TestAuthBackend_RPC(t *testing.T) {
	t.Run("sets the context's token, replacing one in the request", func(t *testing.T) {
		inner := &fakeBackend{}
		ctx := context.WithValue(context.Background(), tokenKey{}, "s3cret")
		args := &structs.CSIVolumeRegisterRequest{WriteRequest: structs.WriteRequest{AuthToken: "smuggled"}}
		must.NoError(t, authBackend{next: inner}.RPC(ctx, "CSIVolume.Register", args, &structs.CSIVolumeRegisterResponse{}))
		must.EqOp(t, "s3cret", args.AuthToken)
		must.EqOp(t, 1, inner.count())
	})
	t.Run("no token in the context is anonymous", func(t *testing.T) {
		inner := &fakeBackend{}
		args := &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: "smuggled"}}
		must.NoError(t, authBackend{next: inner}.RPC(context.Background(), "Node.List", args, &structs.NodeListResponse{}))
		must.EqOp(t, "", args.AuthToken)
	})
	t.Run("a request that cannot carry a token is refused", func(t *testing.T) {
		inner := &fakeBackend{}
		err := authBackend{next: inner}.RPC(context.Background(), "Some.Call", &struct{ ID string }{}, &structs.GenericResponse{})
		must.ErrorIs(t, err, structs.ErrInternal)
		must.ErrorContains(t, err, "rpc Some.Call: request *struct { ID string } carries no ACL token")
		must.Zero(t, inner.count())
	})
}

// TestHandler_Token_FromHeaderOnly: the header's value, trimmed, reaches
// the RPC; a token in the body does not.
func TestHandler_Token_FromHeaderOnly(t *testing.T) {
	cases := []struct {
		name, header, body, want string
	}{
		{"header", "s3cret", "", "s3cret"},
		{"header with blanks", "  s3cret \t", "", "s3cret"},
		{"none", "", "", ""},
		{"in the body, no header", "", `{"AllocationID":"a1","Mode":"write","AuthToken":"mgmt"}`, ""},
		{"in the body and the header", "s3cret", `{"AllocationID":"a1","Mode":"write","AuthToken":"mgmt"}`, "s3cret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &aclBackend{}
			body := tc.body
			if body == "" {
				body = `{"AllocationID":"a1","Mode":"write"}`
			}
			req := httptest.NewRequest("PUT", "/v1/volume/csi/data/claim", strings.NewReader(body))
			if tc.header != "" {
				req.Header.Set(headerToken, tc.header)
			}
			rec := httptest.NewRecorder()
			New(b, testLogger(t)).ServeHTTP(rec, req)
			must.Eq(t, []string{tc.want}, b.seen())
			must.EqOp(t, http.StatusForbidden, rec.Code)
		})
	}
}

// TestHandler_Token_NeverLogged: neither the request log nor a failed
// request's log shows the token.
func TestHandler_Token_NeverLogged(t *testing.T) {
	var logs strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logs})
	h := New(&fakeBackend{err: errors.New("backend broke")}, logger)
	for _, target := range []string{"/v1/nodes", "/v1/acl/token/self"} {
		req := httptest.NewRequest("GET", target, nil)
		req.Header.Set(headerToken, "s3cret-token-value")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		must.EqOp(t, http.StatusInternalServerError, rec.Code)
	}
	must.StrContains(t, logs.String(), "request failed")
	must.StrNotContains(t, logs.String(), "s3cret-token-value")
}
