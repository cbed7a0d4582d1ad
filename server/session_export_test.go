package server

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// This file holds the connection helpers that the tests of both package
// server and package server_test use; they are exported for the latter.

// TLSPool is a connection pool that dials with cfg's certificate, or
// plain TCP if cfg is nil. It shuts down when the test ends.
func TLSPool(t *testing.T, cfg *tlsutil.Config) *rpc.Pool {
	t.Helper()
	var opts []rpc.PoolOption
	if cfg != nil {
		conf, err := tlsutil.NewConfigurator(*cfg)
		must.NoError(t, err)
		opts = append(opts, rpc.WithPoolTLS(conf.OutgoingRPC))
	}
	p := rpc.NewPool(testlog.Logger(t, "pool"), 0, opts...)
	t.Cleanup(p.Shutdown)
	return p
}

// ConnectClient registers node-1, running a monolith instance of hostpath
// that publishes volumes, with the server at addr over a session that
// serves rcvr as ClientCSI, as a client agent does.
func ConnectClient(t *testing.T, addr string, rcvr any) {
	t.Helper()
	pool := clientPool(t, "client", "ClientCSI", rcvr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must.NoError(t, pool.Call(ctx, addr, "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("node-1", "hostpath", true, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &structs.NodeUpdateResponse{}))
}

// PingClient is a client's ClientStatus endpoint that answers a ping with
// its name, to tell which session a server's call to a node reached.
type PingClient struct{ Name string }

func (p *PingClient) Ping(_ *structs.NodeSpecificRequest, reply *structs.ClientPingResponse) error {
	reply.NodeID = p.Name
	return nil
}

// NodeSession opens a session to addr as a client agent does (with cfg's
// certificate, or plain TCP if cfg is nil), whose pings answer name, and
// sends a node call on it with token.
func NodeSession(t *testing.T, addr string, cfg *tlsutil.Config, name, method, token string, args any) error {
	t.Helper()
	srv := rpc.NewServer(testlog.Logger(t, name))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("ClientStatus", &PingClient{Name: name}))
	opts := []rpc.PoolOption{rpc.WithStreamServer(srv)}
	if cfg != nil {
		conf, err := tlsutil.NewConfigurator(*cfg)
		must.NoError(t, err)
		opts = append(opts, rpc.WithPoolTLS(conf.OutgoingRPC))
	}
	pool := rpc.NewPool(testlog.Logger(t, name), 0, opts...)
	t.Cleanup(pool.Shutdown)
	args.(authInfo).SetAuthToken(token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return pool.Call(ctx, addr, method, args, &structs.NodeUpdateResponse{})
}

// clientPool is a client agent's connection pool: the sessions it opens
// serve rcvr as service. Its logs are named name. It shuts down when the
// test ends.
func clientPool(t *testing.T, name, service string, rcvr any) *rpc.Pool {
	t.Helper()
	srv := rpc.NewServer(testlog.Logger(t, name))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register(service, rcvr))
	pool := rpc.NewPool(testlog.Logger(t, name), 0, rpc.WithStreamServer(srv))
	t.Cleanup(pool.Shutdown)
	return pool
}
