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

// ConnectTLSClient is ConnectClient over mutual TLS with cfg's (a client
// agent's) certificate.
func ConnectTLSClient(t *testing.T, addr string, cfg *tlsutil.Config, rcvr any) {
	t.Helper()
	conf, err := tlsutil.NewConfigurator(*cfg)
	must.NoError(t, err)
	srv := rpc.NewServer(testlog.Logger(t, "client"))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("ClientCSI", rcvr))
	pool := rpc.NewPool(testlog.Logger(t, "client"), 0, rpc.WithStreamServer(srv), rpc.WithPoolTLS(conf.OutgoingRPC))
	t.Cleanup(pool.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must.NoError(t, pool.Call(ctx, addr, "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("node-1", "hostpath", true, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &structs.NodeUpdateResponse{}))
}
