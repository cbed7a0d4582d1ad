package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func TestPool_Call_RoundTrip(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	cases := []struct {
		name   string
		method string
		args   any
		want   EchoReply
	}{
		{name: "pointer args", method: "Test.Echo", args: &EchoArgs{Name: "vol-1", N: 3}, want: EchoReply{Name: "vol-1", N: 3}},
		{name: "value args", method: "Test.Value", args: &EchoArgs{Name: "vol-2", N: 3}, want: EchoReply{Name: "vol-2", N: 4}},
		{name: "nil args", method: "Test.Echo", args: nil, want: EchoReply{}},
		{name: "over a session", method: "Test.Session", args: &EchoArgs{Name: "s"}, want: EchoReply{Name: "s", Session: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reply EchoReply
			must.NoError(t, p.Call(testCtx(t), ts.addr, tc.method, tc.args, &reply))
			must.Eq(t, tc.want, reply)
		})
	}
	must.Eq(t, 1, ts.accepted[TypeMultiplex].Load(), must.Sprint("one session reused across calls"))
}

func TestPool_Call_Concurrent(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	const n = 200
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reply EchoReply
			args := &EchoArgs{Name: fmt.Sprintf("call-%d", i), N: i}
			if err := p.Call(testCtx(t), ts.addr, "Test.Echo", args, &reply); err != nil {
				errs <- err
				return
			}
			if reply.Name != args.Name || reply.N != i {
				errs <- fmt.Errorf("call %d got %+v", i, reply)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must.NoError(t, err)
	}
	must.Eq(t, 1, ts.accepted[TypeMultiplex].Load(), must.Sprint("all calls share one session"))
}

func TestPool_Call_ErrorCodes(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	cases := []struct {
		name     string
		args     FailArgs
		sentinel error
		wantMsg  string
	}{
		{name: "bad request", args: FailArgs{Code: structs.CodeBadRequest, Message: "volume \"v1\": no capacity"}, sentinel: structs.ErrBadRequest},
		{name: "permission denied", args: FailArgs{Code: structs.CodePermissionDenied, Message: "token lacks csi-write-volume"}, sentinel: structs.ErrPermissionDenied},
		{name: "not found", args: FailArgs{Code: structs.CodeNotFound, Message: "volume \"v1\" not found"}, sentinel: structs.ErrNotFound},
		{name: "conflict", args: FailArgs{Code: structs.CodeConflict, Message: "volume \"v1\" has a writer, alloc a1"}, sentinel: structs.ErrConflict},
		{name: "internal", args: FailArgs{Code: structs.CodeInternal, Message: "snapshot failed"}, sentinel: structs.ErrInternal},
		{name: "unavailable", args: FailArgs{Code: structs.CodeUnavailable, Message: "no leader"}, sentinel: structs.ErrUnavailable},
		{name: "wrapped", args: FailArgs{Code: structs.CodeNotFound, Message: "node n1 not found", Wrap: true}, sentinel: structs.ErrNotFound, wantMsg: "test: wrapped: node n1 not found"},
		{name: "plain error is internal", args: FailArgs{Message: "disk on fire", Plain: true}, sentinel: structs.ErrInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Call(testCtx(t), ts.addr, "Test.Fail", &tc.args, nil)
			must.ErrorIs(t, err, tc.sentinel)
			want := tc.wantMsg
			if want == "" {
				want = tc.args.Message
			}
			must.EqError(t, err, want)
			var e *structs.Error
			must.True(t, errors.As(err, &e))
		})
	}
}

func TestPool_Call_UnknownMethod(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	for _, method := range []string{"Test.Nope", "Nope.Echo", "NoDot", "Test.", ".Echo", "Test.NotServed", "Test.echo"} {
		t.Run(method, func(t *testing.T) {
			err := p.Call(testCtx(t), ts.addr, method, &EchoArgs{}, &EchoReply{})
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), fmt.Sprintf("%q", method))
		})
	}
}

func TestPool_Call_Panic(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	err := p.Call(testCtx(t), ts.addr, "Test.Panic", &EchoArgs{Name: "x"}, &EchoReply{})
	assertCoded(t, err, structs.CodeInternal, "Test.Panic", "boom x")

	var reply EchoReply
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "after"}, &reply))
	must.Eq(t, "after", reply.Name)
}

func TestPool_Call_ContextEnds(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	cases := []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		cause string
	}{
		{
			name: "deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			cause: context.DeadlineExceeded.Error(),
		},
		{
			name: "cancel",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				return ctx, cancel
			},
			cause: context.Canceled.Error(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			err := p.Call(ctx, ts.addr, "Test.Slow", &SlowArgs{Wait: time.Minute}, &EchoReply{})
			assertCoded(t, err, structs.CodeIndeterminate, "Test.Slow", ts.addr, tc.cause)

			// The method's ctx ends too: the caller hung up.
			select {
			case err := <-ts.svc.slowDone:
				must.Error(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the slow method's context never ended")
			}

			// The session survives a caller giving up.
			var reply EchoReply
			must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "next"}, &reply))
			must.Eq(t, "next", reply.Name)
			must.Eq(t, 1, ts.accepted[TypeMultiplex].Load())
		})
	}
}

func TestPool_Call_ServerRestart(t *testing.T) {
	cases := []struct {
		name         string
		callWhenDown bool
	}{
		{name: "call while down", callWhenDown: true},
		{name: "no call while down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := startServer(t, "127.0.0.1:0")
			p := newPool(t)
			var reply EchoReply
			must.NoError(t, p.Call(testCtx(t), first.addr, "Test.Echo", &EchoArgs{Name: "before"}, &reply))

			first.stop()
			if tc.callWhenDown {
				err := p.Call(testCtx(t), first.addr, "Test.Echo", &EchoArgs{}, &reply)
				assertNoAnswer(t, err, "Test.Echo", first.addr)
			}

			second := startServer(t, first.addr)
			err := p.Call(testCtx(t), second.addr, "Test.Echo", &EchoArgs{Name: "after"}, &reply)
			if err != nil && !tc.callWhenDown {
				// The old session's end may not be noticed before this
				// call; it fails (Indeterminate if its request was
				// written first), drops it, and the next call dials again.
				assertNoAnswer(t, err, "Test.Echo")
				err = p.Call(testCtx(t), second.addr, "Test.Echo", &EchoArgs{Name: "after"}, &reply)
			}
			must.NoError(t, err)
			must.Eq(t, "after", reply.Name)
			must.Eq(t, 1, second.accepted[TypeMultiplex].Load())
		})
	}
}

func TestPool_Call_DialFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := l.Addr().String()
	must.NoError(t, l.Close()) // nothing listens there now

	p := newPool(t)
	err = p.Call(testCtx(t), addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeUnavailable, "Test.Echo", addr)
	must.True(t, structs.NotApplied(err), must.Sprint("nothing was sent: any call may be retried"))
	must.False(t, errors.Is(err, structs.ErrIndeterminate))
}

func TestPool_Call_MaxStreams(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := NewPool(testlog.Logger(t, "test"), 1)
	t.Cleanup(p.Shutdown)

	// One slow call holds the only slot; a second call waits and gives up
	// with its ctx.
	slow := make(chan error, 1)
	go func() {
		slow <- p.Call(testCtx(t), ts.addr, "Test.Slow", &SlowArgs{Wait: 500 * time.Millisecond}, &EchoReply{})
	}()
	<-ts.svc.slowStarted
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Call(ctx, ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeUnavailable, "Test.Echo", context.DeadlineExceeded.Error())
	must.NoError(t, <-slow)
}

func TestPool_Shutdown(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := NewPool(testlog.Logger(t, "test"), 0)
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{}))

	p.Shutdown()
	p.Shutdown() // twice is fine
	err := p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeUnavailable, "Test.Echo", "pool shut down")
}

func BenchmarkPool_Call(b *testing.B) {
	ts := startServer(b, "127.0.0.1:0")
	p := newPool(b)
	ctx := testCtx(b)
	args := &EchoArgs{Name: "vol-1", N: 1}

	b.Run("serial", func(b *testing.B) {
		var reply EchoReply
		for b.Loop() {
			if err := p.Call(ctx, ts.addr, "Test.Echo", args, &reply); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var reply EchoReply
			for pb.Next() {
				if err := p.Call(ctx, ts.addr, "Test.Echo", args, &reply); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// TestPool_WithLocalIP: the pool's connections come from the address it
// was given (an agent's bind address), which is what lets a firewall rule
// tell one client from another. The address is one no other test uses
// (the partition tests of cmd/berth firewall 127.0.0.21 while they run).
func TestPool_WithLocalIP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	from := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			from <- err.Error()
			return
		}
		from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		_ = c.Close()
	}()
	p := NewPool(testlog.Logger(t, "pool"), 0, WithLocalIP("127.0.0.87"))
	t.Cleanup(p.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	callErr := make(chan error, 1)
	go func() { // no berth server there: only the dial counts
		callErr <- p.Call(ctx, l.Addr().String(), "Test.Echo", &EchoArgs{}, &EchoReply{})
	}()
	select {
	case got := <-from:
		must.EqOp(t, "127.0.0.87", got)
	case err := <-callErr:
		select { // the accept may have been ready at the same moment
		case got := <-from:
			must.EqOp(t, "127.0.0.87", got)
		case <-time.After(time.Second):
			t.Fatalf("the call ended before any connection was accepted: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no connection reached the listener within 10s")
	}

	must.Nil(t, NewPool(nil, 0, WithLocalIP("0.0.0.0")).localIP, must.Sprint("an unspecified address lets the system choose"))
	lo, v4, v6 := net.ParseIP("127.0.0.87"), net.ParseIP("10.0.0.2"), net.ParseIP("fd00::2")
	must.Eq(t, lo, sourceFor(lo, "127.0.0.1:4747"))
	must.Nil(t, sourceFor(lo, "10.0.0.1:4747"), must.Sprint("a loopback source cannot reach another host"))
	must.Eq(t, v4, sourceFor(v4, "10.0.0.1:4747"))
	must.Nil(t, sourceFor(v4, "[fd00::1]:4747"), must.Sprint("an IPv4 source for an IPv6 server: the system chooses"))
	must.Eq(t, v6, sourceFor(v6, "[fd00::1]:4747"))
	must.Nil(t, sourceFor(v6, "10.0.0.1:4747"))
	must.Eq(t, v4, sourceFor(v4, "servers.internal:4747"))
	must.Nil(t, sourceFor(nil, "10.0.0.1:4747"))
}

// TestPool_Call_FrameLimit: a message near MaxFrameSize (a big node update,
// a long list) goes through; args past it are refused by the caller before
// they are sent, a reply past it is answered with an Internal error that
// says so, and the session is still good.
func TestPool_Call_FrameLimit(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)

	big := strings.Repeat("v", MaxFrameSize-1024)
	var reply EchoReply
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: big}, &reply))
	must.Eq(t, len(big), len(reply.Name))

	err := p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: big + strings.Repeat("v", 2048)}, &reply)
	assertCoded(t, err, structs.CodeBadRequest, "Test.Echo", errFrameTooLarge.Error())

	err = p.Call(testCtx(t), ts.addr, "Test.Grow", &EchoArgs{N: MaxFrameSize}, &reply)
	assertCoded(t, err, structs.CodeInternal, "Test.Grow", errFrameTooLarge.Error())

	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "small"}, &reply))
	must.Eq(t, "small", reply.Name)
	must.Eq(t, 1, ts.accepted[TypeMultiplex].Load(), must.Sprint("one session throughout"))
}

// TestPool_Call_AnswerLost: a server that reads the whole request, then
// drops the connection without answering, leaves the caller not knowing
// whether the method ran: Indeterminate, not NotApplied, naming the method
// and the address.
func TestPool_Call_AnswerLost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	read := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var typ [1]byte
		if _, err := io.ReadFull(conn, typ[:]); err != nil || typ[0] != TypeMultiplex {
			return
		}
		sess, err := yamux.Server(conn, nil)
		if err != nil {
			return
		}
		defer sess.Close()
		st, err := sess.Accept()
		if err != nil {
			return
		}
		h, _, err := readFrame(st)
		if err != nil {
			read <- "error: " + err.Error()
			return
		}
		read <- h.ServiceMethod // then hang up unanswered
	}()

	err = newPool(t).Call(testCtx(t), l.Addr().String(), "Volume.Register", &EchoArgs{Name: "v1"}, &EchoReply{})
	must.EqOp(t, "Volume.Register", <-read, must.Sprint("the server read the whole request"))
	assertCoded(t, err, structs.CodeIndeterminate, "Volume.Register", l.Addr().String(), "may have been applied")
	must.ErrorIs(t, err, structs.ErrIndeterminate)
	must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("a kind of unavailability"))
	must.False(t, structs.NotApplied(err))
}
