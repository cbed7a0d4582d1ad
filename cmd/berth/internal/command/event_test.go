package command

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// streamFixture serves /v1/event/stream: status, then lines (each flushed),
// then, unless end, waits for the caller to go away. It records each
// request's query.
type streamFixture struct {
	srv     *httptest.Server
	mu      sync.Mutex
	queries []string
}

func newStreamFixture(t *testing.T, status int, lines []string, end bool) *streamFixture {
	f := &streamFixture{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.RawQuery)
		f.mu.Unlock()
		if r.URL.Path != "/v1/event/stream" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(status)
		for _, l := range lines {
			_, _ = io.WriteString(w, l+"\n")
			_ = http.NewResponseController(w).Flush()
		}
		if !end {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func eventLine(t *testing.T, e structs.Event) string {
	b, err := json.Marshal(e)
	must.NoError(t, err)
	return string(b)
}

// streamRun runs the CLI until it has printed want lines, then
// interrupts it (ends its context) and returns the lines, the exit
// status and stderr.
func streamRun(t *testing.T, addr string, want int, args ...string) ([]string, int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	app := &App{Stdout: pw, Stderr: &errb, Getenv: func(k string) string {
		if k == "BERTH_ADDR" {
			return addr
		}
		return ""
	}}
	done := make(chan int, 1)
	go func() {
		code := app.Run(ctx, args)
		_ = pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < want && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case code := <-done:
		return lines, code, errb.String()
	case <-time.After(30 * time.Second):
		t.Fatal("berth event stream did not end once interrupted")
		return nil, 0, ""
	}
}

var (
	streamTaken = structs.Event{Topic: structs.TopicCSIVolume, Type: structs.EventClaimTaken, Key: "data", Namespace: "default", Index: 41,
		Payload: structs.EventPayload{Claim: &structs.CSIVolumeClaimEvent{VolumeID: "data", Namespace: "default", PluginID: "hostpath",
			CSIVolumeClaim: structs.CSIVolumeClaim{AllocID: alloc1, NodeID: node1, Mode: structs.CSIVolumeClaimWrite}}}}
	streamRetry = structs.Event{Topic: structs.TopicCSIVolume, Type: structs.EventClaimReleaseRetry, Key: "data", Namespace: "default", Index: 45,
		Payload: structs.EventPayload{Claim: &structs.CSIVolumeClaimEvent{VolumeID: "data", Namespace: "default", PluginID: "hostpath",
			CSIVolumeClaim: structs.CSIVolumeClaim{AllocID: alloc1, NodeID: node1, Mode: structs.CSIVolumeClaimWrite,
				State: structs.CSIVolumeClaimStateUnpublishing, Attempts: 1, LastError: "node detach on node " + node1 + ": unreachable"}}}}
	streamNode = structs.Event{Topic: structs.TopicNode, Type: structs.EventNodeStatusUpdated, Key: node1, Index: 46,
		Payload: structs.EventPayload{Node: &structs.Node{ID: node1, Name: "client-1", Status: "down", SchedulingEligibility: "eligible"}}}
)

func TestEventStream_PrintsOneLinePerEventUntilInterrupted(t *testing.T) {
	f := newStreamFixture(t, http.StatusOK, []string{"{}", eventLine(t, streamTaken), "{}", eventLine(t, streamRetry), eventLine(t, streamNode)}, false)
	lines, code, stderr := streamRun(t, f.srv.URL, 3, "event", "stream", "-topic", "CSIVolume:data", "-topic", "Node", "-index", "40")
	must.EqOp(t, 0, code, must.Sprint(stderr))
	must.EqOp(t, "", stderr)
	must.Eq(t, []string{
		"41       CSIVolume  ClaimTaken              data         alloc a11c0001 node 8a1c2f3e write taken",
		"45       CSIVolume  ClaimReleaseRetry       data         alloc a11c0001 node 8a1c2f3e write unpublishing, attempt 1 failed: node detach on node " +
			node1 + ": unreachable; next at <none>",
		"46       Node       NodeStatusUpdated       " + node1[:8] + "     client-1 down eligible",
	}, lines)
	must.Eq(t, []string{"index=40&topic=CSIVolume%3Adata&topic=Node"}, f.queries)
}

func TestEventStream_JSONPrintsTheAPIsLines(t *testing.T) {
	taken, node := eventLine(t, streamTaken), eventLine(t, streamNode)
	f := newStreamFixture(t, http.StatusOK, []string{taken, "{}", node}, false)
	lines, code, stderr := streamRun(t, f.srv.URL, 2, "event", "stream", "-json")
	must.EqOp(t, 0, code, must.Sprint(stderr))
	must.Eq(t, []string{taken, node}, lines, must.Sprint("the heartbeat is not printed"))
	must.Eq(t, []string{""}, f.queries)
}

func TestEventStream_Errors(t *testing.T) {
	gone := `{"Code":"Gone","Message":"event stream: the events after index 3 are gone: ...; the oldest index to resume from is 9. List the objects again"}`
	cases := []struct {
		name     string
		status   int
		lines    []string
		args     []string
		wantCode int
		stderr   string
	}{
		{"too far behind at the start", http.StatusGone, []string{gone}, []string{"-index", "3"}, 1,
			"Error: event stream: the events after index 3 are gone: ...; the oldest index to resume from is 9. List the objects again\n"},
		{"fell behind while streaming", http.StatusOK, []string{eventLine(t, streamTaken), `{"Error":` + gone + `}`}, nil, 1,
			"resume from is 9"},
		{"the agent hung up", http.StatusOK, []string{eventLine(t, streamTaken)}, nil, 1,
			"the agent ended the stream: unexpected EOF; to go on from the last event shown, run again with -index 41"},
		{"an unknown topic", http.StatusOK, nil, []string{"-topic", "Volumes"}, 2, `-topic: topic "Volumes" is not one of`},
		{"an argument", http.StatusOK, nil, []string{"data"}, 2, "this command takes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamFixture(t, tc.status, tc.lines, true)
			r := runCLI(t, f.srv.URL, "", append([]string{"event", "stream", "-json"}, tc.args...)...)
			mustExit(t, r, tc.wantCode, tc.stderr)
		})
	}
}

// A plugin event's counts are the ones the state's join filled in (an
// instance on a node that is not ready is not healthy), the same counts
// plugin status shows, not a count of the instances' own Healthy flags.
func TestEventStream_PluginCountsAreTheJoinedOnes(t *testing.T) {
	plugin := structs.Event{Topic: structs.TopicCSIPlugin, Type: structs.EventPluginUpdated, Key: "hostpath", Index: 50,
		Payload: structs.EventPayload{Plugin: &structs.CSIPlugin{ID: "hostpath",
			Controllers:        map[string]*structs.CSIInfo{node1: {Healthy: true}},
			Nodes:              map[string]*structs.CSIInfo{node1: {Healthy: true}, node2: {Healthy: true}},
			ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 2}}}
	f := newStreamFixture(t, http.StatusOK, []string{eventLine(t, plugin)}, false)
	lines, code, stderr := streamRun(t, f.srv.URL, 1, "event", "stream")
	must.EqOp(t, 0, code, must.Sprint(stderr))
	must.Eq(t, []string{"50       CSIPlugin  PluginUpdated           hostpath     controllers 1/1 nodes 1/2"}, lines,
		must.Sprint("node2's instance says healthy but its node is not ready: 1/2, as plugin status shows"))
}
