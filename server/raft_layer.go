package server

import (
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
// write that byte first.
type raftLayer struct {
	addr    net.Addr
	connCh  chan net.Conn
	closeCh chan struct{}
	once    sync.Once
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(addr net.Addr) *raftLayer {
	return &raftLayer{addr: addr, connCh: make(chan net.Conn), closeCh: make(chan struct{})}
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

// Dial opens a raft connection to another server.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{rpc.TypeRaft}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}
