package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func TestCallConn_TypeRPC(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	conn, err := Dial(testCtx(t), ts.addr, TypeRPC)
	must.NoError(t, err)
	defer conn.Close()

	// Sequential calls share the one connection.
	for i := range 3 {
		var reply EchoReply
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "rpc", N: i}, &reply))
		must.Eq(t, EchoReply{Name: "rpc", N: i}, reply)
	}
	err = CallConn(testCtx(t), conn, "Test.Fail", &FailArgs{Code: structs.CodeNotFound, Message: "plugin p1 not found"}, nil)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.EqError(t, err, "plugin p1 not found")

	// Not over a session: no session in the method's context.
	var reply EchoReply
	must.NoError(t, CallConn(testCtx(t), conn, "Test.Session", &EchoArgs{}, &reply))
	must.False(t, reply.Session)
	must.Eq(t, 1, ts.accepted[TypeRPC].Load())

	// A call cut short by its ctx, after its request was sent, gives up
	// the conn: the method may have run, so it is Indeterminate.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = CallConn(ctx, conn, "Test.Slow", &SlowArgs{Wait: time.Minute}, &EchoReply{})
	assertCoded(t, err, structs.CodeIndeterminate, "Test.Slow", context.DeadlineExceeded.Error())
	must.False(t, structs.NotApplied(err))
	// Nothing can be written on the closed conn: not sent, Unavailable.
	err = CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeUnavailable, "Test.Echo")
	must.True(t, structs.NotApplied(err))
}

func TestDial_Fails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Dial(ctx, "127.0.0.1:1", TypeRPC)
	assertCoded(t, err, structs.CodeUnavailable, "127.0.0.1:1")
}

// clientService is what a client agent would register for servers to call
// back (ClientCSI.* in berth).
type clientService struct{}

func (clientService) Echo(args *EchoArgs, reply *EchoReply) error {
	reply.Name = "client saw " + args.Name
	return nil
}

func (clientService) Fail(_ *EchoArgs, _ *EchoReply) error {
	return structs.NewError(structs.CodeConflict, "volume v1 still published on node n1")
}

func (clientService) Slow(ctx context.Context, _ *EchoArgs, _ *EchoReply) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestCallSession_Reverse(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	clientSrv := NewServer(testlog.Logger(t, "test"))
	t.Cleanup(clientSrv.Shutdown)
	must.NoError(t, clientSrv.Register("Client", clientService{}))
	p := newPool(t, WithStreamServer(clientSrv))

	// The client dials; the server learns the session it opened.
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{}))
	var sess *yamux.Session
	select {
	case sess = <-ts.sessions:
	case <-time.After(10 * time.Second):
		t.Fatal("no session reported")
	}

	t.Run("server calls the client", func(t *testing.T) {
		var reply EchoReply
		must.NoError(t, CallSession(testCtx(t), sess, "Client.Echo", &EchoArgs{Name: "unpublish"}, &reply))
		must.Eq(t, "client saw unpublish", reply.Name)
	})
	t.Run("error codes cross back", func(t *testing.T) {
		err := CallSession(testCtx(t), sess, "Client.Fail", &EchoArgs{}, &EchoReply{})
		must.ErrorIs(t, err, structs.ErrConflict)
		must.EqError(t, err, "volume v1 still published on node n1")
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := CallSession(ctx, sess, "Client.Slow", &EchoArgs{}, &EchoReply{})
		assertCoded(t, err, structs.CodeIndeterminate, "Client.Slow", context.DeadlineExceeded.Error())
	})
	t.Run("from inside a server method", func(t *testing.T) {
		// Test.CallBack takes the session from its ctx and calls back.
		var reply EchoReply
		must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.CallBack", &CallBackArgs{Method: "Client.Echo", Name: "nested"}, &reply))
		must.Eq(t, "client saw nested", reply.Name)
	})
	must.Eq(t, 1, ts.accepted[TypeMultiplex].Load())
}

func TestCallSession_ReverseRefused(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	p := newPool(t) // no stream server

	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{}))
	sess := <-ts.sessions
	// The client accepts the stream and closes it unread; the caller
	// only knows its request went out and no answer came.
	err := CallSession(testCtx(t), sess, "Client.Echo", &EchoArgs{}, &EchoReply{})
	assertCoded(t, err, structs.CodeIndeterminate, "Client.Echo")
}
