package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// The fixture server answers the HTTP API's routes with canned objects, the
// way the real handlers shape them (lists filtered by ?prefix=, 404 JSON
// errors, X-Berth-Index), and records the writes it receives.

const (
	node1  = "8a1c2f3e-1111-4c4c-8888-000000000001"
	node2  = "8a1c9d00-2222-4c4c-8888-000000000002"
	node3  = "f00dcafe-3333-4c4c-8888-000000000003"
	alloc1 = "a11c0001-aaaa-4c4c-8888-00000000000a"
	alloc2 = "a11c0002-bbbb-4c4c-8888-00000000000b"
)

var fixtureTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is the time of day a timeline shows for fixtureTime plus d.
func clock(d time.Duration) string { return fixtureTime.Add(d).Local().Format("15:04:05.000") }

func fixtureNodes() []*structs.Node {
	hp := func(ctrl bool, healthy bool) *structs.CSIInfo {
		in := &structs.CSIInfo{PluginID: "hostpath", Healthy: healthy, Provider: "hostpath.berth.io",
			ProviderVersion: "1.0.0", AllocID: alloc2, HealthDescription: "probe ok"}
		if ctrl {
			in.ControllerInfo = &structs.CSIControllerInfo{SupportsAttachDetach: true}
		} else {
			in.NodeInfo = &structs.CSINodeInfo{ID: "hp-node", MaxVolumes: 10}
		}
		return in
	}
	return []*structs.Node{
		{ID: node1, Name: "client-1", Datacenter: "dc1", Status: "ready", HTTPAddr: "10.0.0.1:4746",
			CSIControllerPlugins: map[string]*structs.CSIInfo{"hostpath": hp(true, true)},
			CSINodePlugins:       map[string]*structs.CSIInfo{"hostpath": hp(false, true)},
			Events: []*structs.NodeEvent{
				{Message: "Node registered", Subsystem: "Cluster", Timestamp: fixtureTime},
				{Message: "Plugin hostpath healthy", Subsystem: "CSI", Timestamp: fixtureTime.Add(time.Minute)},
			}},
		{ID: node2, Name: "client-2", Datacenter: "dc1", Status: "down", StatusDescription: "missed heartbeat",
			CSINodePlugins: map[string]*structs.CSIInfo{"hostpath": hp(false, false)}},
		{ID: node3, Name: "client-3", Datacenter: "dc2", Status: "ready"},
	}
}

func fixturePlugins() []*structs.CSIPlugin {
	nodes := fixtureNodes()
	return []*structs.CSIPlugin{
		{ID: "hostpath", Provider: "hostpath.berth.io", Version: "1.0.0", ControllerRequired: true,
			Controllers:        map[string]*structs.CSIInfo{node1: nodes[0].CSIControllerPlugins["hostpath"]},
			Nodes:              map[string]*structs.CSIInfo{node1: nodes[0].CSINodePlugins["hostpath"], node2: nodes[1].CSINodePlugins["hostpath"]},
			ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 2,
			Allocations: []*structs.AllocListStub{{ID: alloc2, NodeID: node1, JobID: "plugin", TaskGroup: "hostpath",
				DesiredStatus: "run", ClientStatus: "running"}}},
		{ID: "hostpath2", Provider: "hostpath.berth.io", Version: "0.9.0",
			Nodes: map[string]*structs.CSIInfo{}, Controllers: map[string]*structs.CSIInfo{}},
	}
}

func fixtureVolumes() []*structs.CSIVolume {
	return []*structs.CSIVolume{
		{ID: "data", Namespace: "default", Name: "data", ExternalID: "vol-0001", PluginID: "hostpath",
			Provider: "hostpath.berth.io", ProviderVersion: "1.0.0", Schedulable: true,
			ControllerRequired: true, ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 2,
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
			RequestedCapabilities: []*structs.CSIVolumeCapability{
				{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
			MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{structs.Redacted}},
			Capacity:     1 << 30,
			Topologies:   []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}},
			Parameters:   map[string]string{"replicas": "3"},
			WriteClaims: map[string]*structs.CSIVolumeClaim{alloc1: {AllocID: alloc1, NodeID: node1,
				Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken,
				Timeline: structs.Timeline{{Step: structs.StepClaimTaken, At: fixtureTime}}}},
			FreedClaims: []*structs.CSIVolumeClaim{{AllocID: alloc3, NodeID: node3, Mode: structs.CSIVolumeClaimWrite,
				State: structs.CSIVolumeClaimStateFreed, Timeline: structs.Timeline{
					{Step: structs.StepClaimTaken, At: fixtureTime.Add(-time.Hour)},
					{Step: structs.StepReleaseStarted, At: fixtureTime.Add(-time.Hour + 2*time.Second)},
					{Step: structs.StepNodeUnpublished, At: fixtureTime.Add(-time.Hour + 2*time.Second + 3*time.Millisecond)},
					{Step: structs.StepFreed, At: fixtureTime.Add(-time.Hour + 2*time.Second + 9*time.Millisecond)}}}},
			PastClaims: map[string]*structs.CSIVolumeClaim{alloc2: {AllocID: alloc2, NodeID: node2,
				Mode: structs.CSIVolumeClaimRead, State: structs.CSIVolumeClaimStateUnpublishing,
				Attempts: 3, LastError: "node unpublish: rpc error:\n node down"}},
			CreateIndex: 10, ModifyIndex: 12},
		// alloc4's claim is stuck: its node left the cluster.
		{ID: "data2", Name: "data2", ExternalID: "vol-0002", PluginID: "hostpath", Schedulable: false,
			PastClaims: map[string]*structs.CSIVolumeClaim{alloc4: {AllocID: alloc4, NodeID: goneNode,
				Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateUnpublishing,
				Attempts: 5, LastError: "node unpublish: node " + goneNode + " is down"}}},
		{ID: "logs", Name: "logs", ExternalID: "vol-0003", PluginID: "hostpath", Schedulable: true, Capacity: 512 << 20},
	}
}

// fixtureSnapshots are what plugin hostpath lists, two to a page unless
// per_page says otherwise.
func fixtureSnapshots() []*structs.CSISnapshot {
	return []*structs.CSISnapshot{
		{ID: "snap-0001", PluginID: "hostpath", SourceVolumeID: "data", ExternalSourceVolumeID: "vol-0001",
			SizeBytes: 1 << 30, CreateTime: fixtureTime, IsReady: true},
		{ID: "snap-0002", PluginID: "hostpath", ExternalSourceVolumeID: "vol-9999",
			SizeBytes: 3 << 29, CreateTime: fixtureTime.Add(time.Hour), IsReady: true},
		{ID: "snap-0003", PluginID: "hostpath", SourceVolumeID: "logs", ExternalSourceVolumeID: "vol-0003"},
		{ID: "snap-0004", PluginID: "hostpath", SizeBytes: 512, CreateTime: fixtureTime.Add(2 * time.Hour), IsReady: true},
		{ID: "snap-0005", PluginID: "hostpath", SourceVolumeID: "data", ExternalSourceVolumeID: "vol-0001",
			SizeBytes: 1 << 30, CreateTime: fixtureTime.Add(3 * time.Hour), IsReady: true},
	}
}

// fixtureExternalVolumes are the volumes plugin hostpath's controller
// lists, two to a page unless per_page says otherwise: data's is on the
// second page of three, data2's is missing, two berth does not know.
func fixtureExternalVolumes() []*structs.CSIExternalVolume {
	return []*structs.CSIExternalVolume{
		{ExternalID: "vol-7777", CapacityBytes: 2 << 30, IsAbnormal: true, Status: "backing file\n missing"},
		{ExternalID: "vol-0003", VolumeID: "logs", CapacityBytes: 512 << 20},
		{ExternalID: "vol-0001", VolumeID: "data", CapacityBytes: 1 << 30,
			PublishedExternalNodeIDs: []string{"hp-node-1", "hp-node-2"}, Status: "healthy"},
		{ExternalID: "vol-8888"},
		{ExternalID: "vol-9999", CapacityBytes: 3 << 29, Topologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "b"}}}},
	}
}

// fixture is the canned API.
type fixture struct {
	srv *httptest.Server

	mu     sync.Mutex
	writes []fixtureWrite
	reads  []fixtureWrite // of the snapshot and external volume lists

	// externalErr, when set, is the BadRequest message every external
	// volume list answers with, as from a plugin that cannot list.
	externalErr string
}

type fixtureWrite struct {
	method, path, query, body string
	secrets                   []string // the X-Berth-CSI-Secrets header's values
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agent/members", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 0, []*structs.ServerMember{
			{Name: "server-2", Addr: "10.0.0.12", Port: 4748, Status: "alive", RPCAddr: "10.0.0.12:4747"},
			{Name: "server-1", Addr: "10.0.0.11", Port: 4748, Status: "alive", Leader: true, RPCAddr: "10.0.0.11:4747",
				Tags: map[string]string{"role": "berth-server", "dc": "dc1"}},
		})
	})
	mux.HandleFunc("GET /v1/operator/raft/configuration", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 40, &structs.RaftConfigurationResponse{Index: 40, Servers: []*structs.RaftServer{
			{ID: "s1", Node: "server-1", Address: "10.0.0.11:4747", Leader: true, Voter: true},
			{ID: "s2", Address: "10.0.0.12:4747", Voter: true},
		}})
	})
	nodeID := func(n *structs.Node) string { return n.ID }
	mux.HandleFunc("GET /v1/nodes", listRoute(50, fixtureNodes, nodeID, (*structs.Node).Stub))
	mux.HandleFunc("GET /v1/node/{id}", getRoute(50, "node", fixtureNodes, nodeID))
	pluginID := func(p *structs.CSIPlugin) string { return p.ID }
	mux.HandleFunc("GET /v1/plugins", listRoute(60, fixturePlugins, pluginID, (*structs.CSIPlugin).Stub))
	mux.HandleFunc("GET /v1/plugin/csi/{id}", getRoute(60, "plugin", fixturePlugins, pluginID))
	volumeID := func(v *structs.CSIVolume) string { return v.ID }
	mux.HandleFunc("GET /v1/volumes", listRoute(70, fixtureVolumes, volumeID, (*structs.CSIVolume).Stub))
	mux.HandleFunc("GET /v1/volume/csi/{id}", getRoute(70, "volume", fixtureVolumes, volumeID))
	mux.HandleFunc("PUT /v1/volume/csi/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.PathValue("id") == "bad" {
			replyError(w, 400, "BadRequest", `volume "bad": capability 1: access_mode "x" is not valid`)
			return
		}
		resp := &structs.CSIVolumeRegisterResponse{WriteMeta: structs.WriteMeta{Index: 80}}
		if r.PathValue("id") == "block" {
			resp.Warnings = []string{`volume "block": plugin "hostpath" did not confirm its capabilities (block access type is not supported); registered anyway`}
		}
		reply(w, 80, resp)
	})
	mux.HandleFunc("DELETE /v1/volume/csi/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.PathValue("id") == "data" && r.URL.Query().Get("force") != "true" {
			replyError(w, 409, "Conflict", `volume "data" is claimed by alloc `+alloc1+`; stop the allocation first`)
			return
		}
		reply(w, 81, &structs.CSIVolumeDeregisterResponse{WriteMeta: structs.WriteMeta{Index: 81}})
	})
	// Create answers as the server does: the volume registered with what
	// the plugin made. Volume "fail" is refused as no controller were
	// healthy; "slow" takes a while.
	mux.HandleFunc("PUT /v1/volume/csi/{id}/create", func(w http.ResponseWriter, r *http.Request) {
		body := f.record(r)
		var req structs.CSIVolumeCreateRequest
		if err := json.Unmarshal(body, &req); err != nil || len(req.Volumes) != 1 {
			replyError(w, 400, "BadRequest", "fixture: bad create body")
			return
		}
		v := req.Volumes[0]
		switch v.ID {
		case "fail":
			replyError(w, 503, "Unavailable", `create volume "fail": plugin "`+v.PluginID+`" has no healthy controller; `+
				`run "berth plugin status `+v.PluginID+`" and start its controller`)
			return
		case "slow":
			time.Sleep(150 * time.Millisecond)
		}
		v.ExternalID = "vol-9f3a"
		v.Capacity = v.RequestedCapacityMin
		reply(w, 82, []*structs.CSIVolume{v.Sanitized()})
	})
	mux.HandleFunc("DELETE /v1/volume/csi/{id}/delete", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.PathValue("id") == "data" {
			replyError(w, 409, "Conflict", `volume "data" is claimed by alloc `+alloc1+`; stop the allocation before deleting the volume`)
			return
		}
		reply(w, 83, &structs.CSIVolumeDeleteResponse{WriteMeta: structs.WriteMeta{Index: 83}})
	})
	f.snapshotRoutes(mux)
	f.jobRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		replyError(w, 404, "NotFound", "no such API route: "+r.Method+" "+r.URL.Path)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// listRoute answers a list route with the stubs of the objects whose ID
// starts with ?prefix=.
func listRoute[O, S any](index int, all func() []O, id func(O) string, stub func(O) S) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var out []S
		for _, o := range all() {
			if strings.HasPrefix(id(o), r.URL.Query().Get("prefix")) {
				out = append(out, stub(o))
			}
		}
		reply(w, index, nonNil(out))
	}
}

// getRoute answers a read route with the object whose ID is {id}.
func getRoute[O any](index int, noun string, all func() []O, id func(O) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, o := range all() {
			if id(o) == r.PathValue("id") {
				reply(w, index, o)
				return
			}
		}
		replyError(w, 404, "NotFound", noun+` "`+r.PathValue("id")+`" not found`)
	}
}

func (f *fixture) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, fixtureWrite{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Values("X-Berth-CSI-Secrets")})
	return body
}

// snapshotRoutes answers the snapshot and external volume routes as the
// server does. Plugin hostpath has snapshots and volumes; hostpath2 has no
// snapshots and cannot list volumes.
func (f *fixture) snapshotRoutes(mux *http.ServeMux) {
	// Create answers with a snapshot of the volume. Volume data2's plugin
	// is refused as having no healthy controller; the name "slow" takes a
	// while; logs' snapshot is not ready yet.
	mux.HandleFunc("POST /v1/volumes/snapshot", func(w http.ResponseWriter, r *http.Request) {
		body := f.record(r)
		var req struct {
			VolumeID, Name string
			Parameters     map[string]string
		}
		if err := json.Unmarshal(body, &req); err != nil {
			replyError(w, 400, "BadRequest", "fixture: bad snapshot body")
			return
		}
		var vol *structs.CSIVolume
		for _, v := range fixtureVolumes() {
			if v.ID == req.VolumeID {
				vol = v
			}
		}
		switch {
		case vol == nil:
			replyError(w, 404, "NotFound", `volume "`+req.VolumeID+`" not found`)
			return
		case vol.ID == "data2":
			replyError(w, 503, "Unavailable", `snapshot volume "data2": plugin "hostpath" has no healthy controller; `+
				`run "berth plugin status hostpath" and start its controller`)
			return
		case req.Name == "slow":
			time.Sleep(150 * time.Millisecond)
		}
		if req.Name == "" {
			req.Name = vol.ID + "-1772366400"
		}
		reply(w, 84, &structs.CSISnapshotCreateResponse{
			Snapshot: &structs.CSISnapshot{ID: "snap-" + vol.ExternalID, PluginID: vol.PluginID, Name: req.Name,
				SourceVolumeID: vol.ID, ExternalSourceVolumeID: vol.ExternalID, SizeBytes: vol.Capacity,
				CreateTime: fixtureTime, IsReady: vol.ID != "logs"},
			WriteMeta: structs.WriteMeta{Index: 84},
		})
	})
	mux.HandleFunc("DELETE /v1/volumes/snapshot", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		q := r.URL.Query()
		for _, p := range []string{"plugin_id", "snapshot_id"} {
			if q.Get(p) == "" {
				replyError(w, 400, "BadRequest", "query parameter "+p+" is required")
				return
			}
		}
		if q.Get("snapshot_id") == "snap-busy" {
			replyError(w, 409, "Conflict", `snapshot "snap-busy" of plugin "`+q.Get("plugin_id")+
				`" is in use by volume "restored"; delete that volume first`)
			return
		}
		reply(w, 85, &structs.CSISnapshotDeleteResponse{WriteMeta: structs.WriteMeta{Index: 85}})
	})
	mux.HandleFunc("GET /v1/volumes/snapshot", func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		switch r.URL.Query().Get("plugin_id") {
		case "", "hostpath":
		case "hostpath2":
			reply(w, 86, map[string]any{"Snapshots": []any{}, "NextToken": ""})
			return
		default:
			replyError(w, 404, "NotFound", `plugin "`+r.URL.Query().Get("plugin_id")+`" not found`)
			return
		}
		page, next, ok := paginate(w, r, fixtureSnapshots())
		if ok {
			reply(w, 86, map[string]any{"Snapshots": page, "NextToken": next})
		}
	})
	mux.HandleFunc("GET /v1/volumes/external", func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		f.mu.Lock()
		failMsg := f.externalErr
		f.mu.Unlock()
		plugin := r.URL.Query().Get("plugin_id")
		switch {
		case plugin == "":
			replyError(w, 400, "BadRequest", "query parameter plugin_id is required")
			return
		case failMsg != "":
			replyError(w, 400, "BadRequest", failMsg)
			return
		case plugin == "hostpath2":
			replyError(w, 400, "BadRequest", `plugin "hostpath2" has no controller; it cannot list volumes`)
			return
		case plugin != "hostpath":
			replyError(w, 404, "NotFound", `plugin "`+plugin+`" not found`)
			return
		}
		page, next, ok := paginate(w, r, fixtureExternalVolumes())
		if ok {
			reply(w, 87, map[string]any{"Volumes": page, "NextToken": next})
		}
	})
}

// paginate cuts one page out of items: per_page of them (2 when absent or
// 0) from the offset next_token names ("page-N"). A bad parameter is
// answered with a 400 and ok false.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) (page []T, next string, ok bool) {
	size, start := 2, 0
	if s := r.URL.Query().Get("per_page"); s != "" && s != "0" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			replyError(w, 400, "BadRequest", "fixture: bad per_page")
			return nil, "", false
		}
		size = n
	}
	if tok := r.URL.Query().Get("next_token"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if err != nil || !strings.HasPrefix(tok, "page-") || n < 0 || n >= len(items) {
			replyError(w, 400, "BadRequest", `next_token "`+tok+`" is not one this listing handed out; start again without it`)
			return nil, "", false
		}
		start = n
	}
	end := min(start+size, len(items))
	if end < len(items) {
		next = "page-" + strconv.Itoa(end)
	}
	return nonNil(items[start:end]), next, true
}

func (f *fixture) recordRead(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, fixtureWrite{r.Method, r.URL.Path, r.URL.RawQuery, "", r.Header.Values("X-Berth-CSI-Secrets")})
}

// readsOf returns the recorded list reads of path.
func (f *fixture) readsOf(path string) []fixtureWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fixtureWrite
	for _, rd := range f.reads {
		if rd.path == path {
			out = append(out, rd)
		}
	}
	return out
}

func (f *fixture) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

func (f *fixture) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = nil
	f.reads = nil
	f.externalErr = ""
}

// failExternal makes every external volume list answer a BadRequest with
// msg.
func (f *fixture) failExternal(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.externalErr = msg
}

func (f *fixture) lastWrite() (fixtureWrite, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.writes) == 0 {
		return fixtureWrite{}, false
	}
	return f.writes[len(f.writes)-1], true
}

// mustLastWrite checks the last write the fixture received: none unless
// wrote, else one with want's method, path, query, body and secrets.
func (f *fixture) mustLastWrite(t *testing.T, wrote bool, want fixtureWrite) {
	t.Helper()
	got, ok := f.lastWrite()
	must.EqOp(t, wrote, ok)
	if !ok {
		return
	}
	must.EqOp(t, want.method, got.method)
	must.EqOp(t, want.path, got.path)
	must.EqOp(t, want.query, got.query)
	must.EqOp(t, want.body, got.body)
	must.Eq(t, want.secrets, got.secrets)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func reply(w http.ResponseWriter, index int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Berth-Index", itoa(index))
	_ = json.NewEncoder(w).Encode(v)
}

func replyError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Code": code, "Message": msg})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// result is what one CLI run printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in-process with BERTH_ADDR set to addr.
func runCLI(t *testing.T, addr, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string {
			if k == "BERTH_ADDR" {
				return addr
			}
			return ""
		},
		Agent: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			_, _ = io.WriteString(stdout, "agent called with "+strings.Join(args, " ")+"\n")
			return 3
		},
	}
	code := app.Run(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

// mustExit checks a run's exit status, and its stderr: empty when
// wantStderr is "", else holding it.
func mustExit(t *testing.T, r result, wantCode int, wantStderr string) {
	t.Helper()
	must.EqOp(t, wantCode, r.code, must.Sprintf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr))
	if wantStderr == "" {
		must.EqOp(t, "", r.stderr)
	} else {
		must.StrContains(t, r.stderr, wantStderr)
	}
}

// mustStdout checks a run's stdout: exactly want when it is set, and
// holding each of contains.
func mustStdout(t *testing.T, r result, want string, contains []string) {
	t.Helper()
	if want != "" {
		must.EqOp(t, want, r.stdout)
	}
	for _, s := range contains {
		must.StrContains(t, r.stdout, s)
	}
}

// fetch GETs a URL directly, to compare with what the CLI printed.
func fetch(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return b
}
