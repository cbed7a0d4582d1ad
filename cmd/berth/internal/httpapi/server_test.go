package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// fakeBackend stands in for the server, which this package must not import:
// it records each call and answers with a canned reply or error.
type fakeBackend struct {
	mu      sync.Mutex
	calls   []fakeCall
	replies map[string]any // method -> pointer to a reply value to copy out
	err     error
}

type fakeCall struct {
	ctx    context.Context
	method string
	args   any
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) RPC(ctx context.Context, method string, args, reply any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{ctx: ctx, method: method, args: args})
	if f.err != nil {
		return f.err
	}
	if canned, ok := f.replies[method]; ok {
		reflect.ValueOf(reply).Elem().Set(reflect.ValueOf(canned).Elem())
	}
	return nil
}

func (f *fakeBackend) last(t *testing.T) fakeCall {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	must.SliceNotEmpty(t, f.calls)
	return f.calls[len(f.calls)-1]
}

func (f *fakeBackend) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Trace, Output: testWriter{t}})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// do serves one request and returns the recorder.
func do(t *testing.T, b Backend, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	rec := httptest.NewRecorder()
	New(b, testLogger(t)).ServeHTTP(rec, req)
	return rec
}

// serveWithSecrets serves one request carrying the X-Berth-CSI-Secrets
// header values and returns the recorder and what was logged.
func serveWithSecrets(t *testing.T, b Backend, method, target, body string, secrets ...string) (*httptest.ResponseRecorder, string) {
	t.Helper()
	var logs strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logs})
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for _, s := range secrets {
		req.Header.Add(headerCSISecrets, s)
	}
	rec := httptest.NewRecorder()
	New(b, logger).ServeHTTP(rec, req)
	return rec, logs.String()
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) errorBody {
	t.Helper()
	var e errorBody
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), must.Sprint(rec.Body.String()))
	return e
}

// mustBadRequest checks that the answer is a 400 BadRequest whose message
// holds wantMsg, and that the request never reached b.
func mustBadRequest(t *testing.T, rec *httptest.ResponseRecorder, b *fakeBackend, wantMsg string) {
	t.Helper()
	must.EqOp(t, http.StatusBadRequest, rec.Code, must.Sprint(rec.Body.String()))
	e := decodeError(t, rec)
	must.EqOp(t, structs.CodeBadRequest, e.Code)
	must.StrContains(t, e.Message, wantMsg)
	must.Zero(t, b.count())
}

// mustNotAllowed checks that method on target is a 405 naming the
// methods it allows, without an RPC.
func mustNotAllowed(t *testing.T, method, target, wantAllow string) {
	t.Helper()
	b := &fakeBackend{}
	rec := do(t, b, method, target, "")
	must.EqOp(t, http.StatusMethodNotAllowed, rec.Code)
	must.EqOp(t, wantAllow, rec.Header().Get("Allow"))
	must.Zero(t, b.count())
}

// routeCase is one route whose RPC answers with a canned reply.
type routeCase struct {
	name, method, target, body string
	wantRPC                    string
	wantIndex                  string
	wantBody                   string // in the answer
}

// testRoutes serves each case against replies and checks it called its
// RPC and answered 200 with the JSON and index expected.
func testRoutes(t *testing.T, replies map[string]any, cases []routeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: replies}
			rec := do(t, b, tc.method, tc.target, tc.body)
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			must.EqOp(t, tc.wantRPC, b.last(t).method)
			must.EqOp(t, "application/json", rec.Header().Get("Content-Type"))
			must.EqOp(t, tc.wantIndex, rec.Header().Get(headerIndex))
			must.StrContains(t, rec.Body.String(), tc.wantBody)
		})
	}
}

// nilObjectCase is a read route whose RPC answers without the object.
type nilObjectCase struct {
	name, target, method string
	reply                any // with index 9
	wantMsg              string
}

// testNilObjects checks each case answers a 404 NotFound with wantMsg
// and the reply's index.
func testNilObjects(t *testing.T, cases []nilObjectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, &fakeBackend{replies: map[string]any{tc.method: tc.reply}}, "GET", tc.target, "")
			must.EqOp(t, http.StatusNotFound, rec.Code)
			must.EqOp(t, "9", rec.Header().Get(headerIndex))
			e := decodeError(t, rec)
			must.EqOp(t, structs.CodeNotFound, e.Code)
			must.EqOp(t, tc.wantMsg, e.Message)
		})
	}
}

func TestHandler_Routes_CallTheirRPC(t *testing.T) {
	meta := structs.QueryMeta{Index: 42}
	leader := "127.0.0.1:4747"
	replies := map[string]any{
		"Status.Leader": &leader,
		"Status.Peers":  &[]string{"127.0.0.1:4747", "127.0.0.2:4747"},
		"Status.Members": &structs.ServerMembersResponse{Members: []*structs.ServerMember{
			{Name: "s1", Addr: "127.0.0.1", Port: 4748, Status: "alive", Leader: true},
		}},
		"Operator.RaftGetConfiguration": &structs.RaftConfigurationResponse{
			Servers: []*structs.RaftServer{{ID: "s1", Address: "127.0.0.1:4747", Leader: true, Voter: true}},
			Index:   7,
		},
		"Node.List": &structs.NodeListResponse{Nodes: []*structs.NodeListStub{{ID: "node-1", Status: "ready"}}, QueryMeta: meta},
		"Node.Get":  &structs.SingleNodeResponse{Node: &structs.Node{ID: "node-1", Status: "ready"}, QueryMeta: meta},
		"CSIPlugin.List": &structs.CSIPluginListResponse{
			Plugins: []*structs.CSIPluginListStub{{ID: "hostpath", NodesHealthy: 1}}, QueryMeta: meta},
		"CSIPlugin.Get":    &structs.CSIPluginGetResponse{Plugin: &structs.CSIPlugin{ID: "hostpath"}, QueryMeta: meta},
		"CSIPlugin.Delete": &structs.CSIPluginDeleteResponse{WriteMeta: structs.WriteMeta{Index: 43}},
		"CSIVolume.List": &structs.CSIVolumeListResponse{
			Volumes: []*structs.CSIVolumeListStub{{ID: "data", PluginID: "hostpath"}}, QueryMeta: meta},
		"CSIVolume.Get":        &structs.CSIVolumeGetResponse{Volume: &structs.CSIVolume{ID: "data"}, QueryMeta: meta},
		"CSIVolume.Register":   &structs.CSIVolumeRegisterResponse{WriteMeta: structs.WriteMeta{Index: 44}},
		"CSIVolume.Deregister": &structs.CSIVolumeDeregisterResponse{WriteMeta: structs.WriteMeta{Index: 45}},
		"CSIVolume.Claim":      &structs.CSIVolumeClaimResponse{Volume: &structs.CSIVolume{ID: "data"}, WriteMeta: structs.WriteMeta{Index: 46}},
		"CSIVolume.Create": &structs.CSIVolumeCreateResponse{
			Volumes: []*structs.CSIVolume{{ID: "data", ExternalID: "vol-1", Capacity: 1 << 30}}, WriteMeta: structs.WriteMeta{Index: 47}},
		"CSIVolume.Delete": &structs.CSIVolumeDeleteResponse{WriteMeta: structs.WriteMeta{Index: 48}},
		"CSIVolume.CreateSnapshot": &structs.CSISnapshotCreateResponse{
			Snapshot: &structs.CSISnapshot{ID: "snap-1", PluginID: "hostpath"}, WriteMeta: structs.WriteMeta{Index: 49}},
		"CSIVolume.DeleteSnapshot": &structs.CSISnapshotDeleteResponse{WriteMeta: structs.WriteMeta{Index: 50}},
		"CSIVolume.ListSnapshots": &structs.CSISnapshotListResponse{
			Snapshots: []*structs.CSISnapshot{{ID: "snap-1", PluginID: "hostpath"}}, QueryMeta: meta},
		"CSIVolume.ListExternal": &structs.CSIVolumeExternalListResponse{
			Volumes: []*structs.CSIExternalVolume{{ExternalID: "vol-1", VolumeID: "data"}}, QueryMeta: meta},
	}
	testRoutes(t, replies, []routeCase{
		{"leader", "GET", "/v1/status/leader", "", "Status.Leader", "", `"127.0.0.1:4747"`},
		{"peers", "GET", "/v1/status/peers", "", "Status.Peers", "", `["127.0.0.1:4747","127.0.0.2:4747"]`},
		{"members", "GET", "/v1/agent/members", "", "Status.Members", "", `[{"Name":"s1"`},
		{"raft configuration", "GET", "/v1/operator/raft/configuration", "", "Operator.RaftGetConfiguration", "7", `"Servers":[{"ID":"s1"`},
		{"node list", "GET", "/v1/nodes", "", "Node.List", "42", `[{"ID":"node-1"`},
		{"node get", "GET", "/v1/node/node-1", "", "Node.Get", "42", `{"ID":"node-1"`},
		{"plugin list", "GET", "/v1/plugins?type=csi", "", "CSIPlugin.List", "42", `[{"ID":"hostpath"`},
		{"plugin list without type", "GET", "/v1/plugins", "", "CSIPlugin.List", "42", `[{"ID":"hostpath"`},
		{"plugin get", "GET", "/v1/plugin/csi/hostpath", "", "CSIPlugin.Get", "42", `{"ID":"hostpath"`},
		{"plugin delete", "DELETE", "/v1/plugin/csi/hostpath", "", "CSIPlugin.Delete", "43", `{"Index":43}`},
		{"volume list", "GET", "/v1/volumes?type=csi", "", "CSIVolume.List", "42", `[{"ID":"data"`},
		{"volume get", "GET", "/v1/volume/csi/data", "", "CSIVolume.Get", "42", `{"ID":"data"`},
		{"volume register", "PUT", "/v1/volume/csi/data", `{"Volumes":[{"PluginID":"hostpath"}]}`, "CSIVolume.Register", "44", `{"Index":44}`},
		{"volume deregister", "DELETE", "/v1/volume/csi/data", "", "CSIVolume.Deregister", "45", `{"Index":45}`},
		{"volume claim put", "PUT", "/v1/volume/csi/data/claim", `{"AllocationID":"a1","Mode":"write"}`, "CSIVolume.Claim", "46", `"Volume":{"ID":"data"`},
		{"volume claim post", "POST", "/v1/volume/csi/data/claim", `{"AllocationID":"a1","Mode":"read"}`, "CSIVolume.Claim", "46", `"Index":46`},
		{"volume create", "PUT", "/v1/volume/csi/data/create", `{"Volumes":[{"PluginID":"hostpath"}]}`, "CSIVolume.Create", "47", `[{"ID":"data","Namespace":"","Name":"","ExternalID":"vol-1"`},
		{"volume delete", "DELETE", "/v1/volume/csi/data/delete", "", "CSIVolume.Delete", "48", `{"Index":48}`},
		{"snapshot create", "POST", "/v1/volumes/snapshot", `{"VolumeID":"data"}`, "CSIVolume.CreateSnapshot", "49", `{"Snapshot":{"ID":"snap-1","PluginID":"hostpath"`},
		{"snapshot delete", "DELETE", "/v1/volumes/snapshot?plugin_id=hostpath&snapshot_id=snap-1", "", "CSIVolume.DeleteSnapshot", "50", `{"Index":50}`},
		{"snapshot list", "GET", "/v1/volumes/snapshot?plugin_id=hostpath", "", "CSIVolume.ListSnapshots", "42", `{"Snapshots":[{"ID":"snap-1"`},
		{"external volume list", "GET", "/v1/volumes/external?plugin_id=hostpath", "", "CSIVolume.ListExternal", "42", `{"Volumes":[{"ExternalID":"vol-1","VolumeID":"data"`},
	})
}

func TestHandler_Routes_EmptyListsAreArrays(t *testing.T) {
	for _, target := range []string{"/v1/nodes", "/v1/plugins", "/v1/volumes", "/v1/status/peers", "/v1/agent/members"} {
		t.Run(target, func(t *testing.T) {
			rec := do(t, &fakeBackend{}, "GET", target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			must.EqOp(t, "[]\n", rec.Body.String())
		})
	}
}

func TestHandler_Routes_UnknownAndWrongMethod(t *testing.T) {
	cases := []struct {
		name, method, target string
		wantStatus           int
		wantMsg              string
		wantAllow            string
	}{
		{"unknown route", "GET", "/v1/nope", http.StatusNotFound, "no such API route: GET /v1/nope", ""},
		{"root", "GET", "/", http.StatusNotFound, "no such API route", ""},
		{"wrong method on list", "POST", "/v1/volumes", http.StatusMethodNotAllowed, "method POST is not allowed on /v1/volumes; use GET", "GET"},
		{"wrong method on volume", "PATCH", "/v1/volume/csi/data", http.StatusMethodNotAllowed, "use DELETE, GET, PUT", "DELETE, GET, PUT"},
		{"get on claim", "GET", "/v1/volume/csi/data/claim", http.StatusMethodNotAllowed, "use POST, PUT", "POST, PUT"},
		{"get on create", "GET", "/v1/volume/csi/data/create", http.StatusMethodNotAllowed, "method GET is not allowed on /v1/volume/csi/data/create; use PUT", "PUT"},
		{"post on create", "POST", "/v1/volume/csi/data/create", http.StatusMethodNotAllowed, "use PUT", "PUT"},
		{"put on delete", "PUT", "/v1/volume/csi/data/delete", http.StatusMethodNotAllowed, "method PUT is not allowed on /v1/volume/csi/data/delete; use DELETE", "DELETE"},
		{"unknown volume action", "PUT", "/v1/volume/csi/data/expand", http.StatusNotFound, "no such API route: PUT /v1/volume/csi/data/expand", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, tc.method, tc.target, "")
			must.EqOp(t, tc.wantStatus, rec.Code)
			must.EqOp(t, tc.wantAllow, rec.Header().Get("Allow"))
			must.StrContains(t, decodeError(t, rec).Message, tc.wantMsg)
			must.Zero(t, b.count())
		})
	}
}

func TestHandler_QueryOptions_Parsed(t *testing.T) {
	cases := []struct {
		name   string
		target string
		want   structs.QueryOptions
	}{
		{"none", "/v1/nodes", structs.QueryOptions{}},
		{"blocking", "/v1/nodes?index=17&wait=30s", structs.QueryOptions{MinQueryIndex: 17, MaxQueryTime: 30 * time.Second}},
		{"wait in bare seconds", "/v1/nodes?wait=5", structs.QueryOptions{MaxQueryTime: 5 * time.Second}},
		{"stale present", "/v1/nodes?stale", structs.QueryOptions{AllowStale: true}},
		{"stale false", "/v1/nodes?stale=false", structs.QueryOptions{}},
		{"prefix and namespace", "/v1/nodes?prefix=ab&namespace=prod", structs.QueryOptions{Prefix: "ab", Namespace: "prod"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "GET", tc.target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			args := b.last(t).args.(*structs.NodeListRequest)
			must.Eq(t, tc.want, args.QueryOptions)
		})
	}
}

func TestHandler_QueryOptions_BadValuesAre400(t *testing.T) {
	cases := []struct {
		name, target, wantMsg string
	}{
		{"index not a number", "/v1/volumes?index=abc", `index="abc"`},
		{"index negative", "/v1/nodes?index=-1", `index="-1"`},
		{"wait not a duration", "/v1/nodes?wait=soon", `wait="soon"`},
		{"wait negative", "/v1/nodes?wait=-5s", `wait="-5s" must not be negative`},
		{"stale not a bool", "/v1/nodes?stale=maybe", `stale="maybe"`},
		{"plugin type", "/v1/plugins?type=host", `type="host" is not supported`},
		{"volume type", "/v1/volumes?type=host", `type="host" is not supported`},
		{"force not a bool", "/v1/volume/csi/data?force=yes-please", `force="yes-please"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			method := "GET"
			if strings.Contains(tc.target, "force") {
				method = "DELETE"
			}
			mustBadRequest(t, do(t, b, method, tc.target, ""), b, tc.wantMsg)
		})
	}
}

func TestHandler_Errors_StatusFromCode(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   structs.ErrorCode
	}{
		{"bad request", structs.NewError(structs.CodeBadRequest, "volume %q: missing plugin_id", "data"), 400, structs.CodeBadRequest},
		{"permission denied", structs.NewError(structs.CodePermissionDenied, "no"), 403, structs.CodePermissionDenied},
		{"not found", structs.NewError(structs.CodeNotFound, "volume %q not found", "data"), 404, structs.CodeNotFound},
		{"conflict", structs.NewError(structs.CodeConflict, `volume "data" is claimed by alloc a1`), 409, structs.CodeConflict},
		{"unavailable", structs.NewError(structs.CodeUnavailable, "no cluster leader"), 503, structs.CodeUnavailable},
		{"internal", structs.NewError(structs.CodeInternal, "boom"), 500, structs.CodeInternal},
		{"uncoded", io.ErrUnexpectedEOF, 500, structs.CodeInternal},
		{"unknown code", &structs.Error{Code: "Weird", Message: "odd"}, 500, structs.CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, &fakeBackend{err: tc.err}, "GET", "/v1/volume/csi/data", "")
			must.EqOp(t, tc.wantStatus, rec.Code)
			e := decodeError(t, rec)
			must.EqOp(t, tc.wantCode, e.Code)
			must.EqOp(t, tc.err.Error(), e.Message)
		})
	}
}

func TestHandler_Get_NilObjectIs404(t *testing.T) {
	testNilObjects(t, []nilObjectCase{
		{"volume", "/v1/volume/csi/data", "CSIVolume.Get", &structs.CSIVolumeGetResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`volume "data" not found; list volumes with GET /v1/volumes?type=csi`},
		{"plugin", "/v1/plugin/csi/hp", "CSIPlugin.Get", &structs.CSIPluginGetResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`plugin "hp" not found; list plugins with GET /v1/plugins?type=csi`},
		{"node", "/v1/node/n1", "Node.Get", &structs.SingleNodeResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`node "n1" not found; list nodes with GET /v1/nodes`},
	})
}

func TestHandler_Context_FlowsIntoRPC(t *testing.T) {
	type key struct{}
	b := &fakeBackend{}
	ctx := context.WithValue(context.Background(), key{}, "marker")
	req := httptest.NewRequest("GET", "/v1/volumes", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	New(b, testLogger(t)).ServeHTTP(rec, req)
	must.EqOp(t, http.StatusOK, rec.Code)
	must.EqOp(t, "marker", b.last(t).ctx.Value(key{}).(string))
}

func TestHandler_Metrics_RuntimeNumbers(t *testing.T) {
	rec := do(t, &fakeBackend{}, "GET", "/v1/metrics?pretty", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	var m runtimeMetrics
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m))
	must.Positive(t, m.Goroutines)
	must.Positive(t, m.Sys)
	must.StrContains(t, rec.Body.String(), "\n    \"Goroutines\"")
}
