package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// recorded is one request the test server saw.
type recorded struct {
	method, path, rawPath, query, body string
	header                             http.Header
}

// cannedServer answers each "METHOD /path" with a canned status, index and
// body, and records every request. Its client does not retry: a canned
// answer never changes (retry_test.go covers retries).
type cannedServer struct {
	mu       sync.Mutex
	requests []recorded
	answers  map[string]canned
}

type canned struct {
	status int
	index  string
	body   string
}

func newCannedServer(t *testing.T, answers map[string]canned) (*cannedServer, *Client) {
	t.Helper()
	cs := &cannedServer{answers: answers}
	srv := httptest.NewServer(cs)
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{Address: srv.URL, Retry: Retry{Disabled: true}})
	must.NoError(t, err)
	return cs, c
}

func (cs *cannedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	cs.mu.Lock()
	cs.requests = append(cs.requests, recorded{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
	a, ok := cs.answers[r.Method+" "+r.URL.Path]
	cs.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"Code":"NotFound","Message":"no such API route"}`)
		return
	}
	if a.index != "" {
		w.Header().Set(HeaderIndex, a.index)
	}
	w.Header().Set(HeaderKnownLeader, "true")
	w.Header().Set(HeaderLastContact, "15")
	if a.status != 0 {
		w.WriteHeader(a.status)
	}
	_, _ = io.WriteString(w, a.body)
}

func (cs *cannedServer) last(t *testing.T) recorded {
	t.Helper()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	must.SliceNotEmpty(t, cs.requests)
	return cs.requests[len(cs.requests)-1]
}

func TestNewClient_Address_Defaults(t *testing.T) {
	cases := []struct {
		name, env, address, want, wantErr string
	}{
		{name: "default", want: "http://127.0.0.1:4746"},
		{name: "from env", env: "http://10.0.0.1:4746", want: "http://10.0.0.1:4746"},
		{name: "config beats env", env: "http://10.0.0.1:4746", address: "http://10.0.0.2:4746", want: "http://10.0.0.2:4746"},
		{name: "host and port only", address: "10.0.0.3:4746", want: "http://10.0.0.3:4746"},
		{name: "trailing slash", address: "https://berth.example/", want: "https://berth.example"},
		{name: "bad scheme", address: "ftp://x", wantErr: "scheme must be http or https"},
		{name: "no host", address: "http://", wantErr: "has no host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(AddressEnv, tc.env)
			c, err := NewClient(Config{Address: tc.address})
			if tc.wantErr != "" {
				must.ErrorContains(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.EqOp(t, tc.want, c.Address())
		})
	}
}

func TestClient_Reads_DecodeAnswers(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/status/leader":               {body: `"127.0.0.1:4747"`},
		"GET /v1/status/peers":                {body: `["a:4747","b:4747"]`},
		"GET /v1/agent/members":               {body: `[{"Name":"s1","Port":4748,"Leader":true}]`},
		"GET /v1/operator/raft/configuration": {index: "9", body: `{"Servers":[{"ID":"s1","Voter":true}],"Index":9}`},
		"GET /v1/nodes":                       {index: "11", body: `[{"ID":"node-1","Status":"ready"}]`},
		"GET /v1/node/node-1":                 {index: "12", body: `{"ID":"node-1","Status":"ready"}`},
		"GET /v1/plugins":                     {index: "13", body: `[{"ID":"hostpath","NodesHealthy":1}]`},
		"GET /v1/plugin/csi/hostpath":         {index: "14", body: `{"ID":"hostpath","Nodes":{"node-1":{"Healthy":true}}}`},
		"GET /v1/volumes":                     {index: "15", body: `[{"ID":"data","Schedulable":true}]`},
		"GET /v1/volume/csi/data":             {index: "16", body: `{"ID":"data","WriteClaims":{"a1":{"AllocID":"a1","State":"unpublishing"}}}`},
	})

	t.Run("leader", func(t *testing.T) {
		got, err := c.Status().Leader()
		must.NoError(t, err)
		must.EqOp(t, "127.0.0.1:4747", got)
	})
	t.Run("peers", func(t *testing.T) {
		got, err := c.Status().Peers()
		must.NoError(t, err)
		must.Eq(t, []string{"a:4747", "b:4747"}, got)
	})
	t.Run("members", func(t *testing.T) {
		got, err := c.Agent().Members()
		must.NoError(t, err)
		must.Len(t, 1, got)
		must.True(t, got[0].Leader)
	})
	t.Run("raft configuration", func(t *testing.T) {
		got, err := c.Operator().RaftGetConfiguration()
		must.NoError(t, err)
		must.EqOp(t, uint64(9), got.Index)
		must.True(t, got.Servers[0].Voter)
	})
	t.Run("node list with blocking query", func(t *testing.T) {
		got, qm, err := c.Nodes().List(&QueryOptions{WaitIndex: 10, WaitTime: 30 * time.Second, Prefix: "no", AllowStale: true})
		must.NoError(t, err)
		must.EqOp(t, "node-1", got[0].ID)
		must.EqOp(t, uint64(11), qm.LastIndex)
		must.True(t, qm.KnownLeader)
		must.EqOp(t, 15*time.Millisecond, qm.LastContact)
		must.EqOp(t, "index=10&prefix=no&stale=&wait=30s", cs.last(t).query)
	})
	t.Run("node info", func(t *testing.T) {
		got, qm, err := c.Nodes().Info("node-1", nil)
		must.NoError(t, err)
		must.EqOp(t, structs.NodeStatusReady, got.Status)
		must.EqOp(t, uint64(12), qm.LastIndex)
	})
	t.Run("plugin list", func(t *testing.T) {
		got, qm, err := c.CSIPlugins().List(nil)
		must.NoError(t, err)
		must.EqOp(t, 1, got[0].NodesHealthy)
		must.EqOp(t, uint64(13), qm.LastIndex)
		must.EqOp(t, "type=csi", cs.last(t).query)
	})
	t.Run("plugin info", func(t *testing.T) {
		got, _, err := c.CSIPlugins().Info("hostpath", nil)
		must.NoError(t, err)
		must.True(t, got.Nodes["node-1"].Healthy)
	})
	t.Run("volume list with filters", func(t *testing.T) {
		got, qm, err := c.CSIVolumes().List(&QueryOptions{PluginID: "hostpath", NodeID: "node-1", Namespace: "prod"})
		must.NoError(t, err)
		must.True(t, got[0].Schedulable)
		must.EqOp(t, uint64(15), qm.LastIndex)
		must.EqOp(t, "namespace=prod&node_id=node-1&plugin_id=hostpath&type=csi", cs.last(t).query)
	})
	t.Run("volume info", func(t *testing.T) {
		got, qm, err := c.CSIVolumes().Info("data", nil)
		must.NoError(t, err)
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, got.WriteClaims["a1"].State)
		must.EqOp(t, uint64(16), qm.LastIndex)
	})
}

func TestClient_IDs_AreEscaped(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{})
	_, _, err := c.CSIVolumes().Info("a b/c?d", nil)
	must.Error(t, err)
	must.EqOp(t, "/v1/volume/csi/a%20b%2Fc%3Fd", cs.last(t).rawPath)
	must.EqOp(t, "", cs.last(t).query)
}

func TestClient_Writes_SendBodies(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/volume/csi/data":       {index: "21", body: `{"Warnings":["plugin \"hp\" did not confirm"],"Index":21}`},
		"DELETE /v1/volume/csi/data":    {index: "22", body: `{"Index":22}`},
		"DELETE /v1/plugin/csi/hp":      {index: "23", body: `{"Index":23}`},
		"PUT /v1/volume/csi/data/claim": {index: "24", body: `{"Volume":{"ID":"data","ReadClaims":{"a1":{"AllocID":"a1"}}},"Index":24}`},
	})

	t.Run("register carries secrets and mount flags unredacted", func(t *testing.T) {
		warnings, wm, err := c.CSIVolumes().Register(&VolumeSpec{
			ID: "data", PluginID: "hp", ExternalID: "ext-1",
			Secrets:      map[string]string{"token": "s3cret"},
			MountOptions: &MountOptions{FSType: "ext4", MountFlags: []string{"uid=1000"}},
			RequestedCapabilities: []*structs.CSIVolumeCapability{{
				AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
		})
		must.NoError(t, err)
		must.EqOp(t, uint64(21), wm.LastIndex)
		must.Eq(t, []string{`plugin "hp" did not confirm`}, warnings)
		// The server decodes the body into structs types: check it reads back intact.
		var req structs.CSIVolumeRegisterRequest
		must.NoError(t, json.Unmarshal([]byte(cs.last(t).body), &req))
		must.EqOp(t, "s3cret", req.Volumes[0].Secrets["token"])
		must.Eq(t, []string{"uid=1000"}, req.Volumes[0].MountOptions.MountFlags)
		must.EqOp(t, "ext-1", req.Volumes[0].ExternalID)
		must.EqOp(t, structs.CSIVolumeAccessModeSingleNodeWriter, req.Volumes[0].RequestedCapabilities[0].AccessMode)
	})
	t.Run("register without id", func(t *testing.T) {
		_, _, err := c.CSIVolumes().Register(&VolumeSpec{PluginID: "hp"})
		must.ErrorContains(t, err, "has no ID")
	})
	t.Run("deregister", func(t *testing.T) {
		wm, err := c.CSIVolumes().Deregister("data", false)
		must.NoError(t, err)
		must.EqOp(t, uint64(22), wm.LastIndex)
		must.EqOp(t, "", cs.last(t).query)
	})
	t.Run("deregister with force", func(t *testing.T) {
		_, err := c.CSIVolumes().Deregister("data", true)
		must.NoError(t, err)
		must.EqOp(t, "force=true", cs.last(t).query)
	})
	t.Run("plugin delete", func(t *testing.T) {
		wm, err := c.CSIPlugins().Delete("hp")
		must.NoError(t, err)
		must.EqOp(t, uint64(23), wm.LastIndex)
	})
	t.Run("claim", func(t *testing.T) {
		vol, wm, err := c.CSIVolumes().Claim(&structs.CSIVolumeClaimRequest{
			VolumeID: "data", AllocationID: "a1", Mode: structs.CSIVolumeClaimRead})
		must.NoError(t, err)
		must.EqOp(t, uint64(24), wm.LastIndex)
		must.MapContainsKey(t, vol.ReadClaims, "a1")
		must.StrContains(t, cs.last(t).body, `"AllocationID":"a1"`)
	})
}

func TestClient_Errors_MatchStructsSentinels(t *testing.T) {
	_, c := newCannedServer(t, map[string]canned{
		"GET /v1/volume/csi/gone":    {status: 404, body: `{"Code":"NotFound","Message":"volume \"gone\" not found"}`},
		"DELETE /v1/volume/csi/busy": {status: 409, body: `{"Code":"Conflict","Message":"volume \"busy\" is claimed by alloc a1"}`},
		"GET /v1/volume/csi/proxy":   {status: 502, body: "bad gateway"},
		"GET /v1/volume/csi/empty":   {status: 500},
	})
	cases := []struct {
		name       string
		call       func() error
		wantIs     error
		wantNotIs  error
		wantStatus int
		wantMsg    string
	}{
		{"not found", func() error { _, _, err := c.CSIVolumes().Info("gone", nil); return err },
			structs.ErrNotFound, structs.ErrConflict, 404, `volume "gone" not found`},
		{"conflict", func() error { _, err := c.CSIVolumes().Deregister("busy", false); return err },
			structs.ErrConflict, structs.ErrNotFound, 409, `volume "busy" is claimed by alloc a1`},
		{"uncoded answer", func() error { _, _, err := c.CSIVolumes().Info("proxy", nil); return err },
			structs.ErrUnavailable, structs.ErrInternal, 502, "502 bad gateway"},
		{"empty answer", func() error { _, _, err := c.CSIVolumes().Info("empty", nil); return err },
			structs.ErrInternal, structs.ErrNotFound, 500, "500 Internal Server Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			must.Error(t, err)
			must.ErrorIs(t, err, tc.wantIs)
			must.False(t, errors.Is(err, tc.wantNotIs))
			var ae *Error
			must.True(t, errors.As(err, &ae))
			must.EqOp(t, tc.wantStatus, ae.StatusCode)
			must.StrContains(t, err.Error(), tc.wantMsg)
			var se *structs.Error
			must.True(t, errors.As(err, &se))
			must.EqOp(t, err.Error(), se.Message)
		})
	}
}

func TestClient_Unreachable_NamesAddress(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c, err := NewClient(Config{Address: addr, Retry: Retry{Disabled: true}})
	must.NoError(t, err)
	_, err = c.Status().Leader()
	must.ErrorContains(t, err, "cannot reach berth at "+addr)
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.True(t, structs.NotApplied(err), must.Sprint("refused: nothing was sent"))
	var ue *UnreachableError
	must.True(t, errors.As(err, &ue))
	must.EqOp(t, addr, ue.Address)
}

func TestClient_WithContext_CancelsBlockingQuery(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	c, err := NewClient(Config{Address: srv.URL})
	must.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.WithContext(ctx).CSIVolumes().List(&QueryOptions{WaitIndex: 5, WaitTime: time.Minute})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		must.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not end when its context was cancelled")
	}
}

func TestVolumeSpec_String_HidesSecrets(t *testing.T) {
	v := &VolumeSpec{ID: "data", Secrets: map[string]string{"token": "s3cret"},
		MountOptions: &MountOptions{MountFlags: []string{"password=hunter2"}}}
	var nilSpec *VolumeSpec
	for _, s := range []string{
		fmt.Sprint(v), fmt.Sprintf("%v", *v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v),
		fmt.Sprintf("%v", v.MountOptions), fmt.Sprintf("%#v", *v.MountOptions),
	} {
		must.StrNotContains(t, s, "s3cret")
		must.StrNotContains(t, s, "hunter2")
	}
	must.StrContains(t, v.String(), `"data"`)
	must.EqOp(t, "<nil>", fmt.Sprint(nilSpec))
}

// TestClient_Timeouts_SilentServer: against a port that accepts and never
// answers, a read and a write each fail once their wait for the answer's
// headers passes, saying so and naming the address.
func TestClient_Timeouts_SilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	c, err := NewClient(Config{Address: l.Addr().String(), Timeouts: Timeouts{Read: 100 * time.Millisecond, Write: 150 * time.Millisecond},
		Retry: Retry{Disabled: true}})
	must.NoError(t, err)

	_, _, err = c.Nodes().List(nil)
	var ue *UnreachableError
	must.True(t, errors.As(err, &ue), must.Sprintf("got %v", err))
	must.StrContains(t, err.Error(), "no answer to GET /v1/nodes within 100ms")
	must.StrContains(t, err.Error(), l.Addr().String())

	_, err = c.Jobs().Deregister("web", false)
	must.True(t, errors.As(err, &ue), must.Sprintf("got %v", err))
	must.StrContains(t, err.Error(), "within 150ms")
	must.ErrorIs(t, err, structs.ErrIndeterminate, must.Sprint("the write went out; its answer did not come"))
	must.False(t, structs.NotApplied(err))
}

// TestClient_Timeouts_BlockingQueryWaits: a blocking query is allowed its
// wait on top of the read timeout; a plain read is not.
func TestClient_Timeouts_BlockingQueryWaits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set(HeaderIndex, "7")
		_, _ = io.WriteString(w, "[]")
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{Address: srv.URL, Timeouts: Timeouts{Read: 100 * time.Millisecond}, Retry: Retry{Disabled: true}})
	must.NoError(t, err)
	_, qm, err := c.Nodes().List(&QueryOptions{WaitIndex: 3, WaitTime: 2 * time.Second})
	must.NoError(t, err)
	must.EqOp(t, uint64(7), qm.LastIndex)
	_, _, err = c.Nodes().List(nil)
	must.ErrorContains(t, err, "no answer")
}
