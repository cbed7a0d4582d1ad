package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

type EchoArgs struct {
	Name string
	N    int
}

type EchoReply struct {
	Name    string
	N       int
	Session bool // the request came over a yamux session
}

type FailArgs struct {
	Code    structs.ErrorCode
	Message string
	Wrap    bool // wrap the coded error with %w
	Plain   bool // return an uncoded error
}

type SlowArgs struct {
	Wait time.Duration
}

type CallBackArgs struct {
	Method string
	Name   string
}

// testService is the receiver the tests register as "Test".
type testService struct {
	slowStarted chan struct{} // Slow signals it has begun, if anyone listens
	slowDone    chan error    // Slow sends its ctx's error when cut short
}

func (s *testService) Echo(args *EchoArgs, reply *EchoReply) error {
	reply.Name, reply.N = args.Name, args.N
	return nil
}

// Grow replies with a name of args.N bytes.
func (s *testService) Grow(args *EchoArgs, reply *EchoReply) error {
	reply.Name = strings.Repeat("g", args.N)
	return nil
}

// Value takes its args by value.
func (s *testService) Value(args EchoArgs, reply *EchoReply) error {
	reply.Name, reply.N = args.Name, args.N+1
	return nil
}

func (s *testService) Fail(args *FailArgs, _ *struct{}) error {
	switch {
	case args.Plain:
		return errors.New(args.Message)
	case args.Wrap:
		return fmt.Errorf("test: wrapped: %w", structs.NewError(args.Code, "%s", args.Message))
	}
	return structs.NewError(args.Code, "%s", args.Message)
}

func (s *testService) Panic(args *EchoArgs, _ *EchoReply) error {
	panic("boom " + args.Name)
}

func (s *testService) Slow(ctx context.Context, args *SlowArgs, reply *EchoReply) error {
	select {
	case s.slowStarted <- struct{}{}:
	default:
	}
	select {
	case <-time.After(args.Wait):
		reply.Name = "slept"
		return nil
	case <-ctx.Done():
		s.slowDone <- ctx.Err()
		return ctx.Err()
	}
}

func (s *testService) Session(ctx context.Context, args *EchoArgs, reply *EchoReply) error {
	_, reply.Session = SessionFromContext(ctx)
	reply.Name = args.Name
	return nil
}

// FwdArgs says whether another server forwarded the request.
type FwdArgs struct{ Forwarded bool }

func (a *FwdArgs) IsForwarded() bool { return a.Forwarded }

// Forwardable is a method whose requests may be forwarded.
func (s *testService) Forwardable(args *FwdArgs, reply *EchoReply) error {
	reply.Name = "served"
	return nil
}

// PeerReply is what Test.Peer answers: the request's Peer.
type PeerReply struct {
	Found bool
	Peer  Peer
}

// Peer answers who sent the request.
func (s *testService) Peer(ctx context.Context, _ *EchoArgs, reply *PeerReply) error {
	reply.Peer, reply.Found = PeerFromContext(ctx)
	return nil
}

// CallBack calls the caller back over the session its request came on.
func (s *testService) CallBack(ctx context.Context, args *CallBackArgs, reply *EchoReply) error {
	sess, ok := SessionFromContext(ctx)
	if !ok {
		return structs.NewError(structs.CodeBadRequest, "test: no session")
	}
	return CallSession(ctx, sess, args.Method, &EchoArgs{Name: args.Name}, reply)
}

// NotServed has no servable shape and must be skipped by Register.
func (s *testService) NotServed(int) error { return nil }

// testServer is a Server behind a Mux on a real 127.0.0.1 listener.
type testServer struct {
	addr     string
	mux      *Mux
	srv      *Server
	svc      *testService
	accepted [256]atomic.Int64 // connections handed over, by type
	sessions chan *yamux.Session
	stop     func()
}

// serverSetup configures startServerWith; its zero value is startServer's.
type serverSetup struct {
	logger   hclog.Logger // default: testlog.Logger
	mux      []MuxOption
	server   []ServerOption
	handlers map[byte]func(net.Conn) // more connection types to serve
}

// startServer serves "Test" on addr ("127.0.0.1:0" for any port) until the
// test ends or stop is called.
func startServer(t testing.TB, addr string) *testServer {
	t.Helper()
	return startServerWith(t, addr, serverSetup{})
}

// startServerWith is startServer configured by setup.
func startServerWith(t testing.TB, addr string, setup serverSetup) *testServer {
	t.Helper()
	logger := setup.logger
	if logger == nil {
		logger = testlog.Logger(t, "test")
	}
	l, err := net.Listen("tcp", addr)
	must.NoError(t, err)

	ts := &testServer{
		addr:     l.Addr().String(),
		srv:      NewServer(logger, setup.server...),
		svc:      &testService{slowStarted: make(chan struct{}, 1), slowDone: make(chan error, 16)},
		sessions: make(chan *yamux.Session, 16),
	}
	must.NoError(t, ts.srv.Register("Test", ts.svc))

	ctx, cancel := context.WithCancel(context.Background())
	mux := NewMux(logger, l, setup.mux...)
	ts.mux = mux
	for typ, fn := range setup.handlers {
		mux.Handle(typ, fn)
	}
	mux.Handle(TypeRPC, func(c net.Conn) {
		ts.accepted[TypeRPC].Add(1)
		ts.srv.ServeConn(ctx, c)
	})
	mux.Handle(TypeMultiplex, func(c net.Conn) {
		ts.accepted[TypeMultiplex].Add(1)
		ts.srv.ServeMultiplex(ctx, c, func(s *yamux.Session) {
			select {
			case ts.sessions <- s:
			default:
			}
		})
	})
	served := make(chan error, 1)
	go func() { served <- mux.Serve(ctx) }()

	var once sync.Once
	ts.stop = func() {
		once.Do(func() {
			cancel()
			must.NoError(t, <-served)
			ts.srv.Shutdown()
		})
	}
	t.Cleanup(ts.stop)
	return ts
}

// newPool returns a pool shut down when the test ends.
func newPool(t testing.TB, opts ...PoolOption) *Pool {
	p := NewPool(testlog.Logger(t, "test"), 0, opts...)
	t.Cleanup(p.Shutdown)
	return p
}

// testCtx is a context for one call, ended with the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recordedLogger returns a logger whose lines the test can read back; they
// go to t.Log too if the test fails.
func recordedLogger(t testing.TB) (hclog.Logger, *testlog.Recorder) {
	rec := &testlog.Recorder{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(rec.String())
		}
	})
	return rec.Logger("test"), rec
}

// assertClosed asserts the peer closes conn: a read ends in EOF or a
// reset, within a bound generous enough for a loaded machine.
func assertClosed(t testing.TB, conn net.Conn) {
	t.Helper()
	must.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, conn)
	must.True(t, err == nil || isReset(err), must.Sprintf("want the conn closed, got %v", err))
}

// rawFrame builds a frame from raw header and body bytes.
func rawFrame(hdr, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, hdr...)
	return append(b, body...)
}

// mustEncode encodes v as msgpack.
func mustEncode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := encode(v)
	must.NoError(t, err)
	return b
}

// assertCoded asserts err is a *structs.Error with code whose message
// contains every part.
func assertCoded(t testing.TB, err error, code structs.ErrorCode, parts ...string) {
	t.Helper()
	must.Error(t, err)
	var e *structs.Error
	must.True(t, errors.As(err, &e), must.Sprintf("not a *structs.Error: %T %v", err, err))
	must.Eq(t, code, e.Code, must.Sprintf("error: %v", err))
	for _, p := range parts {
		must.StrContains(t, err.Error(), p)
	}
}

// assertNoAnswer checks err is a call that got no answer and names parts:
// Unavailable or Indeterminate, as a race decides whether the request was
// written before the connection broke.
func assertNoAnswer(t testing.TB, err error, parts ...string) {
	t.Helper()
	must.ErrorIs(t, err, structs.ErrUnavailable)
	code := structs.ErrorCodeOf(err)
	must.True(t, code == structs.CodeUnavailable || code == structs.CodeIndeterminate, must.Sprintf("code %s: %v", code, err))
	for _, p := range parts {
		must.StrContains(t, err.Error(), p)
	}
}
