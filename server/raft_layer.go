package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/rpc"
)

var errRaftLayerClosed = errors.New("server: raft layer closed")

// raftLayer is raft's StreamLayer over the server's one TCP port: the RPC
// mux hands it connections whose first byte is rpc.TypeRaft, and its dials
// write that byte first. Under TLS its dials are TLS (checking the
// server's name with verify_server_hostname), and the mux hands it only
// TLS connections from server certificates, whatever
// verify_server_hostname says.
type raftLayer struct {
	ctx     context.Context // the server's lifetime: dials end with it
	addr    net.Addr
	bindIP  string             // the source address of its dials
	tls     func() *tls.Config // nil: plain text
	connCh  chan net.Conn
	closeCh chan struct{}
	once    sync.Once
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(ctx context.Context, addr net.Addr, bindIP string, tlsConfig func() *tls.Config) *raftLayer {
	return &raftLayer{ctx: ctx, addr: addr, bindIP: bindIP, tls: tlsConfig, connCh: make(chan net.Conn), closeCh: make(chan struct{})}
}

// handoff gives an accepted raft connection to raft, or closes it when the
// layer is closed.
func (l *raftLayer) handoff(c net.Conn) {
	select {
	case l.connCh <- c:
	case <-l.closeCh:
		_ = c.Close()
	}
}

// Accept waits for the next raft connection.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.connCh:
		return c, nil
	case <-l.closeCh:
		return nil, errRaftLayerClosed
	}
}

// Close stops Accept.
func (l *raftLayer) Close() error {
	l.once.Do(func() { close(l.closeCh) })
	return nil
}

// Addr is the shared listener's address.
func (l *raftLayer) Addr() net.Addr { return l.addr }

// Dial opens a raft connection to another server, within timeout.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := l.ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	opts := []rpc.DialOption{rpc.WithDialLocalIP(l.bindIP)}
	if l.tls != nil {
		opts = append(opts, rpc.WithDialTLS(l.tls))
	}
	return rpc.Dial(ctx, string(address), rpc.TypeRaft, opts...)
}
