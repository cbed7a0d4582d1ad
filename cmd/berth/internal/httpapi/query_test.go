package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestDecodeBody_UnknownFieldsAreRefused: a field the request does not
// have is a 400 naming it, with the closest known name, never dropped.
func TestDecodeBody_UnknownFieldsAreRefused(t *testing.T) {
	cases := []struct {
		name, method, target, body, want string
	}{
		{"a typo of Count", "PUT", "/v1/jobs",
			`{"Job":{"ID":"web","TaskGroups":[{"Name":"g","Counts":2}]}}`, `unknown field "Counts"; did you mean "Count"?`},
		{"a task's field", "PUT", "/v1/jobs",
			`{"Job":{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","KillTimout":1}]}]}}`, `unknown field "KillTimout"; did you mean "KillTimeout"?`},
		{"top level", "PUT", "/v1/jobs", `{"Jobs":{"ID":"web"}}`, `unknown field "Jobs"; did you mean "Job"?`},
		{"nothing close", "PUT", "/v1/jobs", `{"Job":{"ID":"web","Priority":50}}`,
			`unknown field "Priority"; see docs/http-api.md for this route's fields`},
		{"a volume's field", "PUT", "/v1/volume/csi/data", `{"Volumes":[{"ID":"data","PluginId":"hp","CapacityMax":1}]}`,
			`unknown field "CapacityMax"; did you mean`},
		{"a claim's field", "PUT", "/v1/volume/csi/data/claim", `{"VolumeID":"data","Allocation":"a1"}`,
			`unknown field "Allocation"`},
		{"a huge name", "PUT", "/v1/jobs", `{"Job":{"ID":"web","` + longKey + `":1}}`,
			`unknown field "xxxxxxxx`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, tc.method, tc.target, tc.body)
			mustBadRequest(t, rec, b, tc.want)
			must.Less(t, 1024, rec.Body.Len(), must.Sprint("the name is not echoed in full"))
		})
	}
	// Case does not matter to encoding/json, and every field the project's
	// own api client sends is known.
	b := &fakeBackend{}
	rec := do(t, b, "PUT", "/v1/jobs", `{"Job":{"id":"web","TaskGroups":[{"name":"g","count":2}]},"Namespace":"x","Forwarded":false}`)
	must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
	must.EqOp(t, 2, b.last(t).args.(*structs.JobRegisterRequest).Job.TaskGroups[0].Count)
}

var longKey = func() string {
	b := make([]byte, 100_000)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}()

// setBodyReadTimeout shortens bodyReadTimeout for one test; the test's
// servers must be closed (t.Cleanup) after this is called, so that none
// reads it after it is restored.
func setBodyReadTimeout(t *testing.T, d time.Duration) {
	old := bodyReadTimeout
	bodyReadTimeout = d
	t.Cleanup(func() { bodyReadTimeout = old })
}

// rawRequest sends a request with a Content-Length of 1000 and only sent
// as its body on a new connection, and reads the answer; conn's own
// deadline keeps a server that never answers from hanging the test.
func rawRequest(t *testing.T, addr, sent string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	must.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	must.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "PUT /v1/jobs HTTP/1.1\r\nHost: berth\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n%s", sent)
	must.NoError(t, err)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	must.NoError(t, err, must.Sprint("the server answers a body that never arrives"))
	return resp, conn, rd
}

// TestDecodeBody_LyingContentLengthIs408: a body shorter than its
// Content-Length is a 408 once bodyReadTimeout passes, and the
// connection is closed; it never holds the connection.
func TestDecodeBody_LyingContentLengthIs408(t *testing.T) {
	setBodyReadTimeout(t, 100*time.Millisecond)
	b := &fakeBackend{}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ name, sent string }{
		{"cut short", `{"Job":{"I`},
		{"a whole value then nothing", `{"Job":{"ID":"web"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, rd := rawRequest(t, srv.Listener.Addr().String(), tc.sent)
			defer resp.Body.Close()
			must.EqOp(t, http.StatusRequestTimeout, resp.StatusCode)
			var e errorBody
			must.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			must.EqOp(t, structs.CodeBadRequest, e.Code)
			must.StrContains(t, e.Message, "request body did not arrive within 100ms")
			must.Zero(t, b.count())
			_, err := rd.ReadByte()
			must.ErrorIs(t, err, io.EOF, must.Sprint("the server closed the connection"))
		})
	}
}

// TestDecodeBody_DeadlineIsCleared: the body's deadline ends with the
// body, so the connection's next request is not cut short by it.
func TestDecodeBody_DeadlineIsCleared(t *testing.T) {
	setBodyReadTimeout(t, 100*time.Millisecond)
	b := &fakeBackend{}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	must.NoError(t, err)
	defer conn.Close()
	must.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	rd := bufio.NewReader(conn)
	body := `{"Job":{"ID":"web"}}`
	put := fmt.Sprintf("PUT /v1/jobs HTTP/1.1\r\nHost: berth\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	for i := 0; i < 2; i++ {
		_, err := io.WriteString(conn, put)
		must.NoError(t, err)
		resp, err := http.ReadResponse(rd, nil)
		must.NoError(t, err, must.Sprintf("request %d on the connection", i+1))
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		must.EqOp(t, http.StatusOK, resp.StatusCode)
		time.Sleep(300 * time.Millisecond) // past the first body's deadline
	}
	must.EqOp(t, 2, b.count())
}

// slowBackend answers each call after a pause, and records whether the
// request's context was still live when it answered.
type slowBackend struct {
	pause    time.Duration
	canceled chan error
}

func (b *slowBackend) RPC(ctx context.Context, _ string, _, _ any) error {
	time.Sleep(b.pause)
	b.canceled <- ctx.Err()
	return nil
}

// TestDecodeBody_DeadlineDoesNotCutTheCall: a call that outlasts the
// body's deadline (a volume create waits on a plugin) is not cancelled
// by it.
func TestDecodeBody_DeadlineDoesNotCutTheCall(t *testing.T) {
	setBodyReadTimeout(t, 100*time.Millisecond)
	b := &slowBackend{pause: 400 * time.Millisecond, canceled: make(chan error, 1)}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/v1/jobs", "application/json", strings.NewReader(`{"Job":{"ID":"web"}}`))
	must.NoError(t, err)
	_ = resp.Body.Close()
	must.EqOp(t, http.StatusOK, resp.StatusCode)
	must.NoError(t, <-b.canceled, must.Sprint("the request's context outlived the body's deadline"))
}

// TestDecodeBody_RefusedBodyLeavesTheConnectionWhole: after a body is
// refused, the next request on the connection is served with a live
// context.
func TestDecodeBody_RefusedBodyLeavesTheConnectionWhole(t *testing.T) {
	b := &slowBackend{pause: 50 * time.Millisecond, canceled: make(chan error, 1)}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	must.NoError(t, err)
	defer conn.Close()
	must.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	rd := bufio.NewReader(conn)
	for i, body := range []string{`{"Job":{"ID":"web","Counts":1}}`, `{"Job":{"ID":"web"}}`} {
		_, err := fmt.Fprintf(conn, "PUT /v1/jobs HTTP/1.1\r\nHost: berth\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		must.NoError(t, err)
		resp, err := http.ReadResponse(rd, nil)
		must.NoError(t, err, must.Sprintf("request %d on the connection", i+1))
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		must.EqOp(t, []int{http.StatusBadRequest, http.StatusOK}[i], resp.StatusCode)
	}
	must.NoError(t, <-b.canceled, must.Sprint("the second request's context is live"))
}

// TestDecodeBody_TrailingBlankIsFine: white space after the value is
// read and accepted.
func TestDecodeBody_TrailingBlankIsFine(t *testing.T) {
	b := &fakeBackend{}
	rec := do(t, b, "PUT", "/v1/jobs", "{\"Job\":{\"ID\":\"web\"}}\n \t\r\n")
	must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
	b = &fakeBackend{}
	mustBadRequest(t, do(t, b, "PUT", "/v1/jobs", `{"Job":{"ID":"web"}} x`), b, "found more data after it")
}
