package rpc

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// floodFrameLen is what a flood request declares, prefix included: 16 MiB
// less 64 bytes, as in issue 26.
const floodFrameLen = MaxFrameSize - 64

// floodPrefix is the length prefix and header of a Test.Echo request whose
// whole frame declares floodFrameLen bytes; its body follows.
func floodPrefix(t testing.TB) (prefix []byte, bodyLen int) {
	t.Helper()
	hdr := mustEncode(t, &header{ServiceMethod: "Test.Echo", Seq: 1})
	bodyLen = floodFrameLen - framePrefixLen - len(hdr)
	return declared(hdr, bodyLen), bodyLen
}

// declareFrame writes on conn a request declaring floodFrameLen bytes and
// sent bytes of its body, then nothing more.
func declareFrame(t testing.TB, conn net.Conn, sent int) {
	t.Helper()
	prefix, _ := floodPrefix(t)
	must.NoError(t, conn.SetWriteDeadline(time.Now().Add(30*time.Second)))
	_, err := conn.Write(append(prefix, make([]byte, sent)...))
	must.NoError(t, err)
}

// waitFor waits, bounded, until cond holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(cond), wait.Timeout(20*time.Second), wait.Gap(5*time.Millisecond)),
		must.Sprint(what))
}

// TestServer_ServeConn_FrameStall: a request whose bytes stop coming costs
// its connection (its stream, over a session) after the stall timeout,
// well within the frame timeout, with a log line naming the peer and how
// much arrived, and its room in the budget goes back. A request that
// keeps coming, slowly, and a connection idle between requests are not
// cut.
func TestServer_ServeConn_FrameStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger: logger,
		server: []ServerOption{WithFrameStallTimeout(stall), WithFrameTimeout(time.Hour)},
	})

	t.Run("stalled inside a request", func(t *testing.T) {
		conn := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
		declareFrame(t, conn, 1000)
		assertClosed(t, conn)
		logs := rec.String()
		must.StrContains(t, logs, errFrameStalled.Error())
		must.StrContains(t, logs, "no byte for 300ms (the stall timeout)")
		must.StrContains(t, logs, "of 16777152 bytes read")
		must.StrContains(t, logs, "remote_addr="+conn.LocalAddr().String())
		must.Eq(t, 1, ts.srv.framesTimedOut.Load())
		waitFor(t, "the stalled request's room given back", func() bool { return ts.srv.budget.heldNow() == 0 })
	})

	t.Run("stalled inside a request on a stream", func(t *testing.T) {
		conn := dialFrom(t, "127.0.0.1", ts.addr, TypeMultiplex)
		sess, err := yamux.Client(conn, yamuxConfig(testlog.Logger(t, "client")))
		must.NoError(t, err)
		defer sess.Close()
		st, err := sess.Open()
		must.NoError(t, err)
		defer st.Close()
		declareFrame(t, st, 1000)

		must.NoError(t, st.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.Copy(io.Discard, st)
		must.NoError(t, err, must.Sprint("the server closes the stream"))
		var reply EchoReply
		must.NoError(t, CallSession(testCtx(t), sess, "Test.Echo", &EchoArgs{Name: "same session"}, &reply))
		must.Eq(t, "same session", reply.Name, must.Sprint("the session is still served"))
	})

	t.Run("slow but steady", func(t *testing.T) {
		conn := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
		frame, err := appendFrame(nil, &header{ServiceMethod: "Test.Echo", Seq: 9}, mustEncode(t, &EchoArgs{Name: strings.Repeat("s", 40)}))
		must.NoError(t, err)
		// Twenty pieces, a tenth of the stall timeout apart: twice the
		// stall timeout in all.
		piece := len(frame)/20 + 1
		for len(frame) > 0 {
			n := min(piece, len(frame))
			_, err := conn.Write(frame[:n])
			must.NoError(t, err)
			frame = frame[n:]
			time.Sleep(stall / 10)
		}
		must.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		h, body, err := readFrame(conn)
		must.NoError(t, err)
		must.Eq(t, "", h.Error)
		var reply EchoReply
		must.NoError(t, decodeBody(body, &reply))
		must.Eq(t, strings.Repeat("s", 40), reply.Name)
	})

	t.Run("idle between requests", func(t *testing.T) {
		conn := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
		var reply EchoReply
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "before"}, &reply))
		time.Sleep(3 * stall)
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "after"}, &reply))
		must.Eq(t, "after", reply.Name)
	})
}

// TestServer_FrameBudget_WaitsForRoom: with the smallest budget (32 MiB),
// a request holding half of it leaves no room for another large one,
// which waits, while small calls go on; when the first one's connection
// dies its room goes back and the waiting request is served whole.
func TestServer_FrameBudget_WaitsForRoom(t *testing.T) {
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		server: []ServerOption{WithFrameBudget(minFrameBudget), WithFrameStallTimeout(time.Minute)},
	})
	p := newPool(t)

	hog := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
	declareFrame(t, hog, 1<<20)
	waitFor(t, "the hog's room reserved", func() bool { return ts.srv.budget.heldNow() == floodFrameLen })

	big := strings.Repeat("v", 15<<20)
	done := make(chan error, 1)
	go func() {
		var reply EchoReply
		err := p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: big}, &reply)
		if err == nil && reply.Name != big {
			err = io.ErrShortBuffer
		}
		done <- err
	}()
	waitFor(t, "the large call waiting for room", func() bool { return ts.srv.budget.waiting.Load() == 1 })

	var reply EchoReply
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "small"}, &reply),
		must.Sprint("a small call does not wait"))
	must.Eq(t, "small", reply.Name)
	select {
	case err := <-done:
		t.Fatalf("the large call ended while the budget was held: %v", err)
	default:
	}

	must.NoError(t, hog.Close())
	must.NoError(t, <-done)
	waitFor(t, "every room given back", func() bool { return ts.srv.budget.heldNow() == 0 })
	must.LessEq(t, int64(minFrameBudget), ts.srv.budget.peakHeld())
	must.Eq(t, 0, ts.srv.framesRefused.Load())
}

// TestServer_FrameBudget_Refuses: a large request that finds no room
// within the stall timeout is read and dropped, and answered Unavailable
// (it never ran) naming its size and the budget; the session and small
// calls go on. When even its header finds no room (the budget all taken)
// the connection goes, with a log line naming the peer.
func TestServer_FrameBudget_Refuses(t *testing.T) {
	const stall = 300 * time.Millisecond
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger: logger,
		server: []ServerOption{WithFrameBudget(minFrameBudget), WithFrameStallTimeout(stall), WithFrameTimeout(time.Hour)},
	})
	p := newPool(t)
	budget := ts.srv.budget
	hold, err := budget.reserve(context.Background(), MaxFrameSize, 0) // as a request being read would
	must.NoError(t, err)

	var reply EchoReply
	err = p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: strings.Repeat("v", 15<<20)}, &reply)
	assertCoded(t, err, structs.CodeUnavailable, "rpc: Test.Echo refused before it ran", errFrameBudget.Error(),
		"found no room within 300ms: 16777216 of 33554432 bytes held by requests being read")
	must.Eq(t, 1, ts.srv.framesRefused.Load())
	must.StrContains(t, rec.String(), "refusing request: method=Test.Echo")

	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "small"}, &reply))
	must.Eq(t, "small", reply.Name)
	must.Eq(t, 1, ts.accepted[TypeMultiplex].Load(), must.Sprint("one session throughout"))

	// All of it taken: not even a header fits.
	var rest []func()
	for budget.heldNow() < minFrameBudget {
		release, err := budget.reserve(context.Background(), min(smallFrameLen, minFrameBudget-budget.heldNow()), 0)
		must.NoError(t, err)
		rest = append(rest, release)
	}
	conn := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
	err = CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "no room"}, &reply)
	assertNoAnswer(t, err, "Test.Echo")
	must.Eq(t, 2, ts.srv.framesRefused.Load())
	must.StrContains(t, rec.String(), "dropping connection: request not read: remote_addr="+conn.LocalAddr().String())

	hold()
	for _, release := range rest {
		release()
	}
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "room again"}, &reply))
	must.Eq(t, "room again", reply.Name)
	must.Eq(t, 0, ts.srv.framesTimedOut.Load())
	must.Eq(t, 0, budget.heldNow())
}
