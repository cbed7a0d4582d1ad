package rpc

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/berth-csi/berth/tlsutil"
)

// Connection caps. A Mux counts a connection from the moment it accepts it
// until whoever holds it closes it: during the type-byte read, then in its
// handler (an RPC connection, a yamux session, a raft connection alike).
//
// A share of the total is reserved for the connections that keep the
// cluster together: raft's, and under TLS those whose certificate has a
// reserved role (a server's, by default). The rest, the general places,
// take any connection. When they are all taken, a new connection gets a
// reserved place until its type (and, under TLS, its certificate) is
// known; then it keeps the place if it may, and is closed if not. So a
// flood of idle anonymous connections fills the general places only, and
// raft peers still get in. One address may hold only a few reserved
// places (DefaultReservedConnsPerIP), so that a flood that sends nothing,
// or names itself raft without TLS, cannot take them all from a handful
// of addresses.
const (
	// DefaultMaxConnsPerIP caps the connections one remote IP may hold.
	// It is far above what an honest peer opens (a client's one yamux
	// session per server, a server's session and few raft connections per
	// peer) and leaves room for many agents behind one address, as in a
	// test cluster on 127.0.0.1 or behind NAT.
	DefaultMaxConnsPerIP = 512

	// DefaultReservedConnsPerIP caps the reserved places one remote IP may
	// hold (or half the reserve, if lower): a server's raft connections
	// and yamux session to this one, with room to spare.
	DefaultReservedConnsPerIP = 16
	// reservedConnsShare: by default a tenth of the total cap is
	// reserved.
	reservedConnsShare = 10

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

// WithReservedConns sets how many of the WithMaxConns places only raft
// connections and, under TLS, certificates of a reserved role
// (WithReservedRoles) may take; n <= 0 reserves none. The default is a
// tenth of the total cap. It is kept under the total cap, so that one
// general place remains.
func WithReservedConns(n int) MuxOption {
	return func(m *Mux) { m.limits.reserve = max(n, 0) }
}

// WithReservedRoles sets the certificate roles whose TLS connections, of
// any type, may take a reserved place (WithReservedConns). The default is
// tlsutil.RoleServer alone. Raft connections may always.
func WithReservedRoles(roles ...tlsutil.Role) MuxOption {
	return func(m *Mux) { m.reservedRoles = slices.Clone(roles) }
}

// connLimits counts the connections a Mux holds, in all and by remote IP,
// and those of them in reserved places. A cap of 0 is no cap; -1 (before
// setDefaults) is "not configured".
type connLimits struct {
	max      int
	maxPerIP int
	// reserve is how many of max are reserved; reservePerIP how many of
	// them one IP may hold.
	reserve      int
	reservePerIP int

	mu            sync.Mutex
	total         int
	perIP         map[string]int
	reserved      int
	reservedPerIP map[string]int
}

func newConnLimits() *connLimits {
	return &connLimits{max: -1, maxPerIP: -1, reserve: -1, perIP: map[string]int{}, reservedPerIP: map[string]int{}}
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
	if l.reserve < 0 {
		l.reserve = l.max / reservedConnsShare
	}
	if l.max > 0 {
		l.reserve = min(l.reserve, l.max-1)
	} else {
		l.reserve = 0 // no cap: nothing to reserve from
	}
	l.reservePerIP = min(DefaultReservedConnsPerIP, max(l.reserve/2, 1))
}

// admit counts conn in and returns it wrapped so that closing it counts it
// out, or returns an error naming the cap it is over. When only reserved
// places are left, conn takes one (countedConn.reserved): the Mux keeps it
// only if its type or certificate may hold one (mayReserve).
func (l *connLimits) admit(conn net.Conn) (*countedConn, error) {
	ip := remoteIP(conn)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.total >= l.max {
		return nil, fmt.Errorf("%w: %d open, limit %d", errTooManyConns, l.total, l.max)
	}
	if n := l.perIP[ip]; l.maxPerIP > 0 && n >= l.maxPerIP {
		return nil, fmt.Errorf("%w: %d open from %s, limit %d", errTooManyConnsFromIP, n, ip, l.maxPerIP)
	}
	inReserve := l.max > 0 && l.total-l.reserved >= l.max-l.reserve
	if inReserve {
		if n := l.reservedPerIP[ip]; n >= l.reservePerIP {
			return nil, fmt.Errorf("%w: the %d general places are taken and %s holds %d of the %d reserved ones, limit %d from one address",
				errReservedConns, l.max-l.reserve, ip, n, l.reserve, l.reservePerIP)
		}
		l.reserved++
		l.reservedPerIP[ip]++
	}
	l.total++
	l.perIP[ip]++
	return &countedConn{Conn: conn, reserved: inReserve, release: func() { l.release(ip, inReserve) }}, nil
}

// release counts one connection from ip out, and out of the reserve if it
// held a reserved place.
func (l *connLimits) release(ip string, inReserve bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
	if !inReserve {
		return
	}
	l.reserved--
	if l.reservedPerIP[ip]--; l.reservedPerIP[ip] <= 0 {
		delete(l.reservedPerIP, ip)
	}
}

// open returns the connections held, in all and from ip.
func (l *connLimits) open(ip string) (total, fromIP int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perIP[ip]
}

// openReserved returns the reserved places held.
func (l *connLimits) openReserved() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved
}

// mayReserve reports whether a connection of type t, served as served (a
// *tls.Conn under TLS, its handshake done), may hold a reserved place:
// raft's may, and one whose verified certificate has a reserved role.
func (m *Mux) mayReserve(t byte, served net.Conn) bool {
	if t == TypeRaft {
		return true
	}
	tc, ok := served.(*tls.Conn)
	if !ok {
		return false
	}
	role := tlsutil.PeerRole(tc.ConnectionState())
	return role != tlsutil.RoleNone && slices.Contains(m.reservedRoles, role)
}

// countedConn is an admitted connection: its first Close frees its place.
type countedConn struct {
	net.Conn
	// reserved: it holds a reserved place (connLimits.admit).
	reserved bool
	once     sync.Once
	release  func()
}

var _ net.Conn = (*countedConn)(nil)

func (c *countedConn) Close() error {
	// The place first: a peer that sees the close and dials again at once
	// must find it free.
	c.once.Do(c.release)
	return c.Conn.Close()
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
