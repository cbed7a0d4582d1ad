package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

type noMethods struct{}

func TestServer_Register_Errors(t *testing.T) {
	cases := []struct {
		name    string
		svcName string
		rcvr    any
	}{
		{name: "empty name", svcName: "", rcvr: &testService{}},
		{name: "dotted name", svcName: "A.B", rcvr: &testService{}},
		{name: "nil receiver", svcName: "Nil", rcvr: nil},
		{name: "no servable method", svcName: "Empty", rcvr: &noMethods{}},
		{name: "duplicate", svcName: "Test", rcvr: &testService{}},
	}
	srv := NewServer(testlog.Logger(t, "test"))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("Test", &testService{}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := srv.Register(tc.svcName, tc.rcvr)
			must.ErrorIs(t, err, ErrBadService)
		})
	}
}

func TestServer_Call_InProcess(t *testing.T) {
	srv := NewServer(testlog.Logger(t, "test"))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("Test", &testService{slowDone: make(chan error, 16), slowStarted: make(chan struct{}, 1)}))

	cases := []struct {
		name      string
		method    string
		args      any
		reply     any
		wantReply *EchoReply
		wantCode  structs.ErrorCode
		wantMsg   []string
	}{
		{name: "pointer args", method: "Test.Echo", args: &EchoArgs{Name: "a", N: 1}, reply: &EchoReply{}, wantReply: &EchoReply{Name: "a", N: 1}},
		{name: "value for pointer args", method: "Test.Echo", args: EchoArgs{Name: "b"}, reply: &EchoReply{}, wantReply: &EchoReply{Name: "b"}},
		{name: "pointer for value args", method: "Test.Value", args: &EchoArgs{Name: "c", N: 1}, reply: &EchoReply{}, wantReply: &EchoReply{Name: "c", N: 2}},
		{name: "nil args", method: "Test.Echo", args: nil, reply: &EchoReply{}, wantReply: &EchoReply{}},
		{name: "nil reply", method: "Test.Echo", args: &EchoArgs{}, reply: nil},
		{name: "no session in process", method: "Test.Session", args: &EchoArgs{Name: "d"}, reply: &EchoReply{}, wantReply: &EchoReply{Name: "d"}},
		{name: "coded error", method: "Test.Fail", args: &FailArgs{Code: structs.CodeConflict, Message: "claimed"}, reply: &struct{}{}, wantCode: structs.CodeConflict, wantMsg: []string{"claimed"}},
		{name: "wrapped error flattened", method: "Test.Fail", args: &FailArgs{Code: structs.CodeNotFound, Message: "gone", Wrap: true}, reply: &struct{}{}, wantCode: structs.CodeNotFound, wantMsg: []string{"test: wrapped: gone"}},
		{name: "plain error", method: "Test.Fail", args: &FailArgs{Message: "oops", Plain: true}, reply: &struct{}{}, wantCode: structs.CodeInternal, wantMsg: []string{"oops"}},
		{name: "unknown method", method: "Test.Nope", args: &EchoArgs{}, reply: &EchoReply{}, wantCode: structs.CodeBadRequest, wantMsg: []string{`"Test.Nope"`}},
		{name: "wrong args type", method: "Test.Echo", args: &FailArgs{}, reply: &EchoReply{}, wantCode: structs.CodeBadRequest, wantMsg: []string{"Test.Echo", "args"}},
		{name: "wrong reply type", method: "Test.Echo", args: &EchoArgs{}, reply: &FailArgs{}, wantCode: structs.CodeBadRequest, wantMsg: []string{"Test.Echo", "reply"}},
		{name: "reply not a pointer", method: "Test.Echo", args: &EchoArgs{}, reply: EchoReply{}, wantCode: structs.CodeBadRequest, wantMsg: []string{"Test.Echo", "reply"}},
		{name: "panic", method: "Test.Panic", args: &EchoArgs{Name: "p"}, reply: &EchoReply{}, wantCode: structs.CodeInternal, wantMsg: []string{"Test.Panic", "boom p"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := srv.Call(testCtx(t), tc.method, tc.args, tc.reply)
			if tc.wantCode != "" {
				assertCoded(t, err, tc.wantCode, tc.wantMsg...)
				return
			}
			must.NoError(t, err)
			if tc.wantReply != nil {
				must.Eq(t, tc.wantReply, tc.reply.(*EchoReply))
			}
		})
	}

	t.Run("context passed through", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := srv.Call(ctx, "Test.Slow", &SlowArgs{Wait: time.Minute}, &EchoReply{})
		// The method returned ctx.Err(): the call was cut short while it
		// ran, so it may have done its work.
		assertCoded(t, err, structs.CodeIndeterminate, "Test.Slow", context.DeadlineExceeded.Error())
	})
}

func TestServer_Call_AfterShutdown(t *testing.T) {
	srv := NewServer(testlog.Logger(t, "test"))
	must.NoError(t, srv.Register("Test", &testService{}))
	srv.Shutdown()
	srv.Shutdown() // twice is fine

	err := srv.Call(testCtx(t), "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeUnavailable, "Test.Echo", "shut down")
}

// TestServer_ServeConn_BadInput writes malformed input on a TypeRPC
// connection. A bad body costs an error response; bytes that are not a
// frame cost the connection. Either way the server keeps serving others.
func TestServer_ServeConn_BadInput(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)
	echoHdr := func(seq uint64) []byte {
		return mustEncode(t, &header{ServiceMethod: "Test.Echo", Seq: seq})
	}

	cases := []struct {
		name      string
		write     []byte
		closeSend bool              // half-close after writing
		wantCode  structs.ErrorCode // "" means the server closes the conn
	}{
		{name: "garbage body", write: rawFrame(echoHdr(7), []byte{0xc1, 0xff, 0x00, 0x13}), wantCode: structs.CodeBadRequest},
		{name: "body of the wrong type", write: rawFrame(echoHdr(7), mustEncode(t, "not a struct")), wantCode: structs.CodeBadRequest},
		{name: "field of the wrong type", write: rawFrame(echoHdr(7), mustEncode(t, map[string]any{"N": "three"})), wantCode: structs.CodeBadRequest},
		{name: "garbage bytes", write: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{name: "garbage header", write: rawFrame([]byte{0xc1, 0xc1, 0xc1}, nil)},
		{name: "zero header length", write: rawFrame(nil, nil)},
		{name: "truncated frame", write: rawFrame(echoHdr(7), mustEncode(t, &EchoArgs{Name: "x"}))[:12], closeSend: true},
		{name: "huge body length", write: append(rawFrame(echoHdr(7), nil)[:4], 0xff, 0xff, 0xff, 0xff)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Dial(testCtx(t), ts.addr, TypeRPC)
			must.NoError(t, err)
			defer conn.Close()
			must.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))

			_, err = conn.Write(tc.write)
			must.NoError(t, err)
			if tc.closeSend {
				must.NoError(t, conn.(*net.TCPConn).CloseWrite())
			}

			h, _, err := readFrame(conn)
			if tc.wantCode == "" {
				must.True(t, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err),
					must.Sprintf("want the conn closed, got %v", err))
			} else {
				must.NoError(t, err)
				must.Eq(t, uint64(7), h.Seq)
				assertCoded(t, remoteError(&h), tc.wantCode, "Test.Echo", "decode args")

				// The conn is still in step and serving.
				var reply EchoReply
				must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "same conn"}, &reply))
				must.Eq(t, "same conn", reply.Name)
			}

			// Others are still served.
			var reply EchoReply
			must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "other"}, &reply))
			must.Eq(t, "other", reply.Name)
		})
	}
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}

func TestServer_Shutdown(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t)
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{}))

	// A method in flight is cut short by Shutdown.
	slow := make(chan error, 1)
	go func() {
		slow <- p.Call(testCtx(t), ts.addr, "Test.Slow", &SlowArgs{Wait: time.Minute}, &EchoReply{})
	}()
	<-ts.svc.slowStarted
	ts.srv.Shutdown()
	must.ErrorIs(t, <-ts.svc.slowDone, context.Canceled)
	assertCoded(t, <-slow, structs.CodeIndeterminate, "Test.Slow")

	// The listener still accepts, but the server no longer serves.
	err := p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertNoAnswer(t, err, "Test.Echo", ts.addr)
}

// TestServer_ServeConn_OversizeFrame: a request that declares more than
// MaxFrameSize (60 MiB, as in issue 11) costs the sender its connection at
// once, before any body is read, with a log line naming it; others are
// still served.
func TestServer_ServeConn_OversizeFrame(t *testing.T) {
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{logger: logger})
	p := newPool(t)

	conn, err := Dial(testCtx(t), ts.addr, TypeRPC)
	must.NoError(t, err)
	defer conn.Close()
	hdr := mustEncode(t, &header{ServiceMethod: "Test.Echo", Seq: 7})
	_, err = conn.Write(append(declared(hdr, 60<<20), make([]byte, 4096)...))
	must.NoError(t, err)

	assertClosed(t, conn)
	logs := rec.String()
	must.StrContains(t, logs, "frame too large")
	must.StrContains(t, logs, "remote_addr="+conn.LocalAddr().String())

	var reply EchoReply
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "other"}, &reply))
	must.Eq(t, "other", reply.Name)
}

// TestServer_ServeConn_FrameTimeout: a request started and not finished
// within the frame timeout costs its connection (or its stream, over a
// session), with a log line naming the peer. A connection idle between
// requests and a method slower than the timeout are not cut.
func TestServer_ServeConn_FrameTimeout(t *testing.T) {
	const frameTimeout = 150 * time.Millisecond
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger: logger,
		server: []ServerOption{WithFrameTimeout(frameTimeout)},
	})
	p := newPool(t)
	partial := rawFrame(mustEncode(t, &header{ServiceMethod: "Test.Echo", Seq: 7}), mustEncode(t, &EchoArgs{Name: "x"}))[:12]

	t.Run("stalled inside a request", func(t *testing.T) {
		conn, err := Dial(testCtx(t), ts.addr, TypeRPC)
		must.NoError(t, err)
		defer conn.Close()
		_, err = conn.Write(partial)
		must.NoError(t, err)

		assertClosed(t, conn)
		logs := rec.String()
		must.StrContains(t, logs, "request too slow")
		must.StrContains(t, logs, "remote_addr="+conn.LocalAddr().String())
	})

	t.Run("stalled inside a request on a stream", func(t *testing.T) {
		conn, err := Dial(testCtx(t), ts.addr, TypeMultiplex)
		must.NoError(t, err)
		sess, err := yamux.Client(conn, yamuxConfig(testlog.Logger(t, "client")))
		must.NoError(t, err)
		defer sess.Close()
		st, err := sess.Open()
		must.NoError(t, err)
		defer st.Close()
		_, err = st.Write(partial)
		must.NoError(t, err)

		must.NoError(t, st.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.Copy(io.Discard, st)
		must.NoError(t, err, must.Sprint("the server closes the stream"))

		var reply EchoReply
		must.NoError(t, CallSession(testCtx(t), sess, "Test.Echo", &EchoArgs{Name: "same session"}, &reply))
		must.Eq(t, "same session", reply.Name, must.Sprint("the session is still served"))
	})

	t.Run("idle between requests", func(t *testing.T) {
		conn, err := Dial(testCtx(t), ts.addr, TypeRPC)
		must.NoError(t, err)
		defer conn.Close()
		var reply EchoReply
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "before"}, &reply))
		time.Sleep(3 * frameTimeout)
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "after"}, &reply))
		must.Eq(t, "after", reply.Name)
	})

	t.Run("method slower than the timeout", func(t *testing.T) {
		var reply EchoReply
		must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Slow", &SlowArgs{Wait: 3 * frameTimeout}, &reply))
		must.Eq(t, "slept", reply.Name)
	})
}
