package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// scriptedServer answers its requests in turn with the script's answers,
// the last one again once the script runs out, and records each request's
// method and body. An answer with status 0 hangs up without answering.
type scriptedServer struct {
	mu     sync.Mutex
	script []canned
	seen   []recorded
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, recorded{method: r.Method, path: r.URL.Path, body: string(body)})
	a := s.script[min(len(s.seen), len(s.script))-1]
	s.mu.Unlock()
	if a.status == 0 {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set(HeaderIndex, a.index)
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *scriptedServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.seen...)
}

// retries records the calls of the OnRetry hook.
type retries struct {
	mu       sync.Mutex
	attempts []int
	errs     []error
}

func (r *retries) hook(attempt int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, attempt)
	r.errs = append(r.errs, err)
}

// newScripted starts a scripted server and a client of it that retries
// with backoffs of a millisecond, under retry's other settings.
func newScripted(t *testing.T, retry Retry, script ...canned) (*scriptedServer, *Client, *retries) {
	t.Helper()
	s := &scriptedServer{script: script}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	retry.MinBackoff, retry.MaxBackoff = time.Millisecond, time.Millisecond
	r := &retries{}
	c, err := NewClient(Config{Address: srv.URL, Retry: retry, OnRetry: r.hook})
	must.NoError(t, err)
	return s, c, r
}

var (
	answerUnavailable = canned{status: 503, body: `{"Code":"Unavailable","Message":"Volume.Register: no cluster leader after 5s"}`}
	answerNotReady    = canned{status: 503, body: `{"Code":"NotReady","Message":"node n1 is not ready yet"}`}
	answerLost        = canned{status: 503, body: `{"Code":"Indeterminate","Message":"CSIVolumeRegister: leadership lost while committing log; the write may or may not have been applied: read the object before retrying"}`}
	answerOK          = canned{status: 200, index: "42", body: `{"Index":42}`}
)

func register(c *Client) error {
	_, err := c.Raw().Write(http.MethodPut, "/v1/volume/csi/data", nil, map[string]string{"ID": "data", "PluginID": "hp"}, nil)
	return err
}

func readVolume(c *Client) error {
	var out any
	_, err := c.Raw().Query("/v1/volume/csi/data", nil, &out, nil)
	return err
}

// TestClient_Retry_NotApplied: a write answered Unavailable, then NotReady,
// is sent again, its body whole each time, and the third answer is the
// result; the hook sees each retried answer.
func TestClient_Retry_NotApplied(t *testing.T) {
	s, c, r := newScripted(t, Retry{}, answerUnavailable, answerNotReady, answerOK)
	must.NoError(t, register(c))

	reqs := s.requests()
	must.Len(t, 3, reqs)
	for _, req := range reqs {
		must.EqOp(t, http.MethodPut, req.method)
		must.EqOp(t, `{"ID":"data","PluginID":"hp"}`, req.body)
	}
	must.Eq(t, []int{1, 2}, r.attempts)
	must.ErrorIs(t, r.errs[0], structs.ErrUnavailable)
	must.ErrorIs(t, r.errs[1], structs.ErrNotReady)
}

// TestClient_Retry_Indeterminate: a write whose answer was lost is not
// sent again, and says so by its code; a read is.
func TestClient_Retry_Indeterminate(t *testing.T) {
	t.Run("write", func(t *testing.T) {
		s, c, r := newScripted(t, Retry{}, answerLost, answerOK)
		err := register(c)
		must.Len(t, 1, s.requests())
		must.SliceEmpty(t, r.attempts)
		var ae *Error
		must.True(t, errors.As(err, &ae), must.Sprintf("got %v", err))
		must.EqOp(t, string(structs.CodeIndeterminate), ae.Code)
		must.EqOp(t, 503, ae.StatusCode)
		must.ErrorIs(t, err, structs.ErrIndeterminate)
		must.ErrorIs(t, err, structs.ErrUnavailable)
		must.False(t, structs.NotApplied(err))
		must.StrContains(t, err.Error(), "read the object before retrying")
	})
	t.Run("read", func(t *testing.T) {
		s, c, r := newScripted(t, Retry{}, answerLost, answerOK)
		must.NoError(t, readVolume(c))
		must.Len(t, 2, s.requests())
		must.Eq(t, []int{1}, r.attempts)
	})
}

// TestClient_Retry_AnswerNeverCame: a connection that breaks after the
// request went out is retried for a read, never for a write, whose error
// then says it may have been applied.
func TestClient_Retry_AnswerNeverCame(t *testing.T) {
	hangUp := canned{} // status 0
	t.Run("write", func(t *testing.T) {
		s, c, r := newScripted(t, Retry{}, hangUp, answerOK)
		err := register(c)
		must.Len(t, 1, s.requests())
		must.SliceEmpty(t, r.attempts)
		var ue *UnreachableError
		must.True(t, errors.As(err, &ue), must.Sprintf("got %v", err))
		must.ErrorIs(t, err, structs.ErrIndeterminate)
		must.False(t, structs.NotApplied(err))
	})
	t.Run("read", func(t *testing.T) {
		s, c, r := newScripted(t, Retry{}, hangUp, answerOK)
		must.NoError(t, readVolume(c))
		must.Len(t, 2, s.requests())
		must.Eq(t, []int{1}, r.attempts)
	})
}

// TestClient_Retry_UncodedAnswer: a 503 without berth's code (a proxy's)
// does not say whether a write was applied: only a read is retried.
func TestClient_Retry_UncodedAnswer(t *testing.T) {
	proxy := canned{status: 503, body: "upstream connect error"}
	s, c, _ := newScripted(t, Retry{}, proxy, proxy, answerOK)
	err := register(c)
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.Len(t, 1, s.requests())
	must.NoError(t, readVolume(c))
	must.Len(t, 3, s.requests())
}

// TestClient_Retry_Refused: a connection refused is not retried, a write
// or a read: no agent listens at the address, and the caller hears so at
// once.
func TestClient_Retry_Refused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := l.Addr().String()
	must.NoError(t, l.Close()) // nothing listens there now

	retried := 0
	c, err := NewClient(Config{Address: "http://" + addr, Retry: Retry{MinBackoff: time.Millisecond},
		OnRetry: func(int, error) { retried++ }})
	must.NoError(t, err)
	for _, call := range []func(*Client) error{register, readVolume} {
		err := call(c)
		var ue *UnreachableError
		must.True(t, errors.As(err, &ue), must.Sprintf("got %T %v", err, err))
		must.True(t, structs.NotApplied(err), must.Sprintf("got %v", err))
	}
	must.EqOp(t, 0, retried)
}

// TestClient_Retry_Budget: once the budget is spent the last error comes
// back, naming the attempts, with its code and type intact.
func TestClient_Retry_Budget(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		s, c, r := newScripted(t, Retry{Attempts: 3}, answerUnavailable)
		err := register(c)
		must.Len(t, 3, s.requests())
		must.Eq(t, []int{1, 2}, r.attempts)
		must.ErrorContains(t, err, "no cluster leader after 5s (gave up after 3 attempts in ")
		var ae *Error
		must.True(t, errors.As(err, &ae))
		must.EqOp(t, string(structs.CodeUnavailable), ae.Code)
		must.True(t, structs.NotApplied(err))
	})
	t.Run("time", func(t *testing.T) {
		// The first backoff already passes the budget.
		s := &scriptedServer{script: []canned{answerUnavailable}}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		c, err := NewClient(Config{Address: srv.URL, Retry: Retry{MaxWait: time.Millisecond, MinBackoff: time.Hour}})
		must.NoError(t, err)
		err = register(c)
		must.ErrorContains(t, err, "(gave up after 1 attempt in ")
		must.Len(t, 1, s.requests())
	})
}

// TestClient_Retry_Disabled: with retries off a request is sent once and
// its error comes back as the server sent it.
func TestClient_Retry_Disabled(t *testing.T) {
	s, c, r := newScripted(t, Retry{Disabled: true}, answerUnavailable, answerOK)
	err := register(c)
	must.EqError(t, err, "Volume.Register: no cluster leader after 5s")
	must.Len(t, 1, s.requests())
	must.SliceEmpty(t, r.attempts)
}

// TestClient_Retry_ContextEndsBackoff: the client's context ending cuts a
// backoff short, and the error says so and names what was retried.
func TestClient_Retry_ContextEndsBackoff(t *testing.T) {
	s := &scriptedServer{script: []canned{answerUnavailable}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := NewClient(Config{Address: srv.URL, Retry: Retry{MinBackoff: 20 * time.Second, MaxWait: time.Minute},
		OnRetry: func(int, error) { cancel() }})
	must.NoError(t, err)
	err = register(c.WithContext(ctx))
	must.ErrorIs(t, err, context.Canceled)
	must.StrContains(t, err.Error(), "PUT /v1/volume/csi/data")
	must.StrContains(t, err.Error(), "no cluster leader")
	must.Len(t, 1, s.requests())
}

func TestRetry_Backoff_Bounded(t *testing.T) {
	r := Retry{}.withDefaults()
	for n := 1; n <= 40; n++ {
		d := r.backoff(n)
		must.Positive(t, d)
		must.LessEq(t, DefaultRetryMaxBackoff, d)
	}
	must.LessEq(t, DefaultRetryMinBackoff, r.backoff(1))
	must.GreaterEq(t, DefaultRetryMaxBackoff/2, r.backoff(40))
}

// TestRetrySafe_TransportFailures: a write is retried after a transport
// failure only when nothing was sent (the dial timed out); never after a
// refusal, a certificate or name failure, or a connection that broke once
// the request was out; a read after any failure a retry can mend.
func TestRetrySafe_TransportFailures(t *testing.T) {
	unreachable := func(err error) error { return &UnreachableError{Address: "10.0.0.1:4646", Err: err} }
	dialTimeout := unreachable(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded})
	refused := unreachable(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	broken := unreachable(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	noName := unreachable(&net.DNSError{Err: "no such host", Name: "nope", IsNotFound: true})
	cases := []struct {
		name      string
		err       error
		put, read bool
	}{
		{"dial timed out", dialTimeout, true, true},
		{"refused", refused, false, false},
		{"broken after sending", broken, false, true},
		{"unknown host", noName, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.EqOp(t, tc.put, retrySafe(http.MethodPut, tc.err))
			must.EqOp(t, tc.read, retrySafe(http.MethodGet, tc.err))
		})
	}
}
