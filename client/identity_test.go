package client

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

func TestIdentity_NodeSecret(t *testing.T) {
	dir := t.TempDir()
	id, err := loadOrCreateNodeID(dir)
	must.NoError(t, err)
	secret, err := loadOrCreateNodeSecret(dir)
	must.NoError(t, err)
	must.Len(t, 36, []byte(secret))
	must.NotEq(t, id, secret)

	info, err := os.Stat(filepath.Join(dir, "client", "node-secret"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), info.Mode().Perm())

	again, err := loadOrCreateNodeSecret(dir)
	must.NoError(t, err)
	must.Eq(t, secret, again, must.Sprint("a restarted client is the same node: same secret"))
	other, err := loadOrCreateNodeSecret(t.TempDir())
	must.NoError(t, err)
	must.NotEq(t, secret, other)

	must.NoError(t, os.WriteFile(filepath.Join(dir, "client", "node-secret"), []byte("short\n"), 0o600))
	_, err = loadOrCreateNodeSecret(dir)
	must.ErrorContains(t, err, "malformed")
	must.StrNotContains(t, err.Error(), "short", must.Sprint("a secret's value never reaches an error"))
}

// tokenRecorder is a server's Node endpoint that records the token of
// each call.
type tokenRecorder struct {
	mu     sync.Mutex
	tokens map[string]string // method -> token
}

func (r *tokenRecorder) record(method, token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens[method] = token
}

func (r *tokenRecorder) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	r.record("UpdateStatus", args.AuthToken)
	return nil
}

func (r *tokenRecorder) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
	r.record("List", args.AuthToken)
	return nil
}

// TestServers_NodeSecretOnTheNodesCallsOnly: the client's own calls carry
// its node secret; the calls its HTTP API makes for a user carry the
// user's token, never the node's secret.
func TestServers_NodeSecretOnTheNodesCallsOnly(t *testing.T) {
	rec := &tokenRecorder{tokens: map[string]string{}}
	srv := rpc.NewServer(testlog.Logger(t, "server"))
	must.NoError(t, srv.Register("Node", rec))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = l.Close()
		srv.Shutdown()
	})
	mux := rpc.NewMux(testlog.Logger(t, "mux"), l)
	mux.Handle(rpc.TypeMultiplex, func(c net.Conn) { srv.ServeMultiplex(ctx, c, nil) })
	go func() { _ = mux.Serve(ctx) }()

	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Servers = []string{l.Addr().String()}
	cfg.RPCTimeout = 5 * time.Second
	cfg.Logger = testlog.Logger(t, "client")
	c, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(c.pool.Shutdown)

	must.NoError(t, nodeRPC{c}.RPC(ctx, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: c.NodeID()}, &structs.NodeUpdateResponse{}))
	must.NoError(t, c.RPC(ctx, "Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: "users-token"}},
		&structs.NodeListResponse{}))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	must.Eq(t, c.nodeSecret, rec.tokens["UpdateStatus"])
	must.Eq(t, "users-token", rec.tokens["List"])
}
