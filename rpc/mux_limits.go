package rpc

import (
	"fmt"
	"net"
	"sync"
)

// Connection caps. A Mux counts a connection from the moment it accepts it
// until whoever holds it closes it: during the type-byte read, then in its
// handler (an RPC connection, a yamux session, a raft connection alike).
const (
	// DefaultMaxConnsPerIP caps the connections one remote IP may hold.
	// It is far above what an honest peer opens (a client's one yamux
	// session per server, a server's session and few raft connections per
	// peer) and leaves room for many agents behind one address, as in a
	// test cluster on 127.0.0.1 or behind NAT.
	DefaultMaxConnsPerIP = 512

	// fallbackMaxConns is the total cap when the fd limit is unknown.
	fallbackMaxConns = 4096
	// minMaxConns and maxMaxConns clamp the total cap derived from the fd
	// limit: enough to work under a tiny limit, and few enough under a
	// huge one that the goroutines and buffers of idle connections stay
	// bounded.
	minMaxConns = 64
	maxMaxConns = 16384
)

// DefaultMaxConns is the total cap a Mux takes when not given one: half the
// process's soft limit on open files, clamped to [64, 16384] (4096 where
// the limit cannot be read). The other half stays for the HTTP listener,
// raft's files, plugin sockets and dials, so that RPC exhaustion cannot
// starve them. (Go raises the soft limit to the hard one at start on
// Linux, so this is half the hard limit there.)
func DefaultMaxConns() int {
	n, ok := fdLimit()
	if !ok {
		return fallbackMaxConns
	}
	return int(min(max(n/2, minMaxConns), maxMaxConns))
}

// connLimits counts the connections a Mux holds, in all and by remote IP.
// A cap of 0 is no cap; -1 (before setDefaults) is "not configured".
type connLimits struct {
	max      int
	maxPerIP int

	mu    sync.Mutex
	total int
	perIP map[string]int
}

func newConnLimits() *connLimits {
	return &connLimits{max: -1, maxPerIP: -1, perIP: map[string]int{}}
}

// setDefaults fills the caps the options left unset.
func (l *connLimits) setDefaults() {
	if l.max < 0 {
		l.max = DefaultMaxConns()
	}
	if l.maxPerIP < 0 {
		l.maxPerIP = DefaultMaxConnsPerIP
		if l.max > 0 {
			// One address never takes every place.
			l.maxPerIP = min(l.maxPerIP, max(l.max/2, 1))
		}
	}
}

// admit counts conn in and returns it wrapped so that closing it counts it
// out, or returns an error naming the cap it is over.
func (l *connLimits) admit(conn net.Conn) (net.Conn, error) {
	ip := remoteIP(conn)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.total >= l.max {
		return nil, fmt.Errorf("%w: %d open, limit %d", errTooManyConns, l.total, l.max)
	}
	if n := l.perIP[ip]; l.maxPerIP > 0 && n >= l.maxPerIP {
		return nil, fmt.Errorf("%w: %d open from %s, limit %d", errTooManyConnsFromIP, n, ip, l.maxPerIP)
	}
	l.total++
	l.perIP[ip]++
	return &countedConn{Conn: conn, release: func() { l.release(ip) }}, nil
}

// release counts one connection from ip out.
func (l *connLimits) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// open returns the connections held, in all and from ip.
func (l *connLimits) open(ip string) (total, fromIP int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perIP[ip]
}

// countedConn is an admitted connection: its first Close frees its place.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

var _ net.Conn = (*countedConn)(nil)

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// remoteIP is the key conn is counted under: its peer's IP, or the whole
// address for a peer that has none.
func remoteIP(conn net.Conn) string {
	switch a := conn.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case nil:
		return ""
	default:
		if host, _, err := net.SplitHostPort(a.String()); err == nil {
			return host
		}
		return a.String()
	}
}
