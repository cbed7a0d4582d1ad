package httpapi

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

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const testNodeSecret = "5ec2e7e5-0000-4000-8000-0000000000ee"

// openStream GETs target on srv and returns the response and a reader of
// its lines; the request ends with the test (or cancel).
func openStream(t *testing.T, srv *httptest.Server, target string) (*http.Response, *bufio.Scanner, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp, bufio.NewScanner(resp.Body), cancel
}

// streamLine is a line of the stream as the test reads it.
type streamLine struct {
	structs.Event
	Error *errorBody
}

// nextLine reads one line; it fails the test when the stream ends.
func nextLine(t *testing.T, sc *bufio.Scanner) (string, streamLine) {
	t.Helper()
	must.True(t, sc.Scan(), must.Sprintf("the stream ended: %v", sc.Err()))
	var l streamLine
	must.NoError(t, json.Unmarshal(sc.Bytes(), &l), must.Sprintf("line %q is not one JSON object", sc.Text()))
	return sc.Text(), l
}

func registerNode(t *testing.T, s *servertest.TestServer, n *structs.Node) {
	t.Helper()
	must.NoError(t, s.RPC(t.Context(), "Node.Register", &structs.NodeRegisterRequest{Node: n,
		WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &structs.NodeUpdateResponse{}))
}

// TestEventStream_RealServer_LinesKeyFilterHeartbeats: against a real
// server, the stream is NDJSON, one event per line; ?topic=Node:node-2
// passes node-2's events and no other; an idle stream writes heartbeat
// lines ({}) at the handler's interval.
func TestEventStream_RealServer_LinesKeyFilterHeartbeats(t *testing.T) {
	s := servertest.Cluster(t, 1).Servers[0]
	srv := httptest.NewServer(New(s.Server, testLogger(t), WithEventHeartbeat(20*time.Millisecond)))
	t.Cleanup(srv.Close)
	registerNode(t, s, statetest.Node("node-1"))
	registerNode(t, s, statetest.Node("node-2"))

	resp, sc, _ := openStream(t, srv, "/v1/event/stream?topic=Node:node-2&index=1")
	must.EqOp(t, http.StatusOK, resp.StatusCode)
	must.EqOp(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	must.NotEq(t, "", resp.Header.Get("X-Berth-Index"))

	text, l := nextLine(t, sc)
	must.EqOp(t, structs.TopicNode, l.Topic, must.Sprint(text))
	must.EqOp(t, structs.EventNodeRegistered, l.Type)
	must.EqOp(t, "node-2", l.Key)
	must.EqOp(t, "node-2", l.Payload.Node.ID)
	must.Positive(t, l.Index)
	must.StrNotContains(t, text, "SecretHash")

	// Idle: heartbeats.
	for range 2 {
		text, l = nextLine(t, sc)
		must.EqOp(t, "{}", text)
	}

	must.NoError(t, s.RPC(t.Context(), "Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: "node-1",
		Eligibility: structs.NodeSchedulingIneligible}, &structs.NodeEligibilityUpdateResponse{}))
	must.NoError(t, s.RPC(t.Context(), "Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: "node-2",
		Eligibility: structs.NodeSchedulingIneligible}, &structs.NodeEligibilityUpdateResponse{}))
	for {
		text, l = nextLine(t, sc)
		if text == "{}" {
			continue
		}
		must.EqOp(t, "node-2", l.Key, must.Sprintf("only node-2 passes the filter: %s", text))
		if l.Type == structs.EventNodeEligibilityUpdated {
			break
		}
	}
}

// TestEventStream_RealServer_APIClient: the api client's stream passes on
// the events (not the heartbeats) with their lines, filters by key, never
// shows a volume's secrets, and closes its channel when its context ends.
func TestEventStream_RealServer_APIClient(t *testing.T) {
	s := servertest.Cluster(t, 1).Servers[0]
	srv := httptest.NewServer(New(s.Server, testLogger(t), WithEventHeartbeat(20*time.Millisecond)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)
	registerNode(t, s, statetest.NodeWithPlugin("node-1", "hostpath", false, true, true))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events, err := c.Events().Stream(ctx, []string{"CSIVolume:data"}, 0, nil)
	must.NoError(t, err)
	for _, id := range []string{"other", "data"} {
		vol := statetest.Volume(id, "hostpath")
		vol.Secrets = structs.CSISecrets{"token": "volume-secret-XYZ"}
		must.NoError(t, s.RPC(t.Context(), "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
			Volumes: []*structs.CSIVolume{vol}}, &structs.CSIVolumeRegisterResponse{}))
	}
	item := <-events
	must.NoError(t, item.Err)
	must.EqOp(t, structs.EventVolumeRegistered, item.Event.Type)
	must.EqOp(t, "data", item.Event.Key)
	must.EqOp(t, "data", item.Event.Payload.Volume.ID)
	must.Nil(t, item.Event.Payload.Volume.Secrets)
	must.StrContains(t, string(item.Raw), `"Type":"VolumeRegistered"`)
	must.StrNotContains(t, string(item.Raw), "volume-secret")

	cancel()
	for item := range events {
		must.NoError(t, item.Err, must.Sprint("a stream its caller ended ends without an error"))
	}
}

// scriptBackend answers Event.Next from a script, in order; past its end
// it waits for the caller to go away.
type scriptBackend struct {
	mu      sync.Mutex
	answers []scriptAnswer
	calls   []structs.EventNextRequest
}

type scriptAnswer struct {
	reply structs.EventNextResponse
	err   error
}

func (b *scriptBackend) RPC(ctx context.Context, method string, args, reply any) error {
	b.mu.Lock()
	b.calls = append(b.calls, *args.(*structs.EventNextRequest))
	if len(b.answers) == 0 {
		b.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	a := b.answers[0]
	b.answers = b.answers[1:]
	b.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	*reply.(*structs.EventNextResponse) = a.reply
	return nil
}

func (b *scriptBackend) requests() []structs.EventNextRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]structs.EventNextRequest(nil), b.calls...)
}

func goneError() error {
	return structs.NewError(structs.CodeGone, "event stream: the events after index 3 are gone: the oldest index to resume from is 9")
}

// A refusal of the first poll is the answer's status: too far behind is
// 410 Gone, a topic the token may not read 403; a bad topic is 400
// before any poll.
func TestEventStream_RefusedBeforeTheFirstLine(t *testing.T) {
	cases := []struct {
		name   string
		target string
		err    error
		status int
		code   structs.ErrorCode
		polls  int
	}{
		{"too far behind", "/v1/event/stream?index=3", goneError(), http.StatusGone, structs.CodeGone, 1},
		{"a topic the token may not read", "/v1/event/stream?topic=Node",
			structs.NewError(structs.CodePermissionDenied, "Permission denied: token lacks node policy \"read\", which topic Node needs"),
			http.StatusForbidden, structs.CodePermissionDenied, 1},
		{"an unknown topic", "/v1/event/stream?topic=Volumes", nil, http.StatusBadRequest, structs.CodeBadRequest, 0},
		{"a bad index", "/v1/event/stream?index=-1", nil, http.StatusBadRequest, structs.CodeBadRequest, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &scriptBackend{answers: []scriptAnswer{{err: tc.err}}}
			rec := httptest.NewRecorder()
			New(b, testLogger(t)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
			must.EqOp(t, tc.status, rec.Code)
			e := decodeError(t, rec)
			must.EqOp(t, tc.code, e.Code)
			must.SliceLen(t, tc.polls, b.requests())
			if tc.code == structs.CodeGone {
				must.StrContains(t, e.Message, "oldest index to resume from is 9")
			}
		})
	}
}

// Falling behind while streaming ends the stream with an error line after
// the events sent; the polls resume after the last index sent, and wait
// no longer than the heartbeat interval.
func TestEventStream_GoneMidStreamIsAnErrorLine(t *testing.T) {
	ev := structs.Event{Topic: structs.TopicCSIVolume, Type: structs.EventClaimTaken, Key: "data", Index: 5,
		Payload: structs.EventPayload{Claim: &structs.CSIVolumeClaimEvent{VolumeID: "data"}}}
	b := &scriptBackend{answers: []scriptAnswer{
		{reply: structs.EventNextResponse{Events: []structs.Event{ev}, Index: 5}},
		{reply: structs.EventNextResponse{Index: 7}},
		{err: goneError()},
	}}
	srv := httptest.NewServer(New(b, testLogger(t), WithEventHeartbeat(time.Hour)))
	t.Cleanup(srv.Close)
	resp, sc, _ := openStream(t, srv, "/v1/event/stream?topic=CSIVolume:data&index=3")
	must.EqOp(t, http.StatusOK, resp.StatusCode)

	must.EqOp(t, "3", resp.Header.Get("X-Berth-Index"), must.Sprint("the stream starts after the index asked for"))

	_, l := nextLine(t, sc)
	must.EqOp(t, structs.EventClaimTaken, l.Type)
	must.EqOp(t, 5, l.Index)
	text, l := nextLine(t, sc)
	must.NotNil(t, l.Error, must.Sprint(text))
	must.EqOp(t, structs.CodeGone, l.Error.Code)
	must.StrContains(t, l.Error.Message, "resume from is 9")
	must.False(t, sc.Scan(), must.Sprint("the error line is the last"))

	reqs := b.requests()
	must.SliceLen(t, 3, reqs)
	must.Eq(t, []uint64{3, 5, 7}, []uint64{reqs[0].Index, reqs[1].Index, reqs[2].Index})
	must.EqOp(t, 0, reqs[0].MaxWait, must.Sprint("the first poll answers at once"))
	must.EqOp(t, eventPollWait, reqs[1].MaxWait)
	must.Eq(t, map[structs.EventTopic][]string{structs.TopicCSIVolume: {"data"}}, reqs[1].Topics)
}

// TestEventStream_RealServer_RestoreEndsTheStream: a snapshot restore
// cannot be told as events, so a stream open across it ends with a Gone
// line that says to list again; a new stream after it works.
func TestEventStream_RealServer_RestoreEndsTheStream(t *testing.T) {
	s := servertest.Cluster(t, 1).Servers[0]
	srv := httptest.NewServer(New(s.Server, testLogger(t), WithEventHeartbeat(20*time.Millisecond)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)
	registerNode(t, s, statetest.Node("node-1"))
	body, _, err := c.Operator().SnapshotSave()
	must.NoError(t, err)
	file, err := io.ReadAll(body)
	_ = body.Close()
	must.NoError(t, err)

	_, sc, _ := openStream(t, srv, "/v1/event/stream?topic=Node")
	text, _ := nextLine(t, sc)
	must.EqOp(t, "{}", text)
	_, _, err = c.Operator().SnapshotRestore(bytes.NewReader(file))
	must.NoError(t, err)
	for {
		text, l := nextLine(t, sc)
		if text == "{}" {
			continue
		}
		must.NotNil(t, l.Error, must.Sprint(text))
		must.EqOp(t, structs.CodeGone, l.Error.Code)
		must.StrContains(t, l.Error.Message, "snapshot restore")
		must.StrContains(t, l.Error.Message, "List the objects again")
		break
	}
	must.False(t, sc.Scan(), must.Sprint("the error line is the last"))

	// From now on a new stream: the next change comes.
	_, sc, _ = openStream(t, srv, "/v1/event/stream?topic=Node:node-2")
	registerNode(t, s, statetest.Node("node-2"))
	for {
		text, l := nextLine(t, sc)
		if text != "{}" {
			must.EqOp(t, "node-2", l.Key, must.Sprint(text))
			break
		}
	}
}
