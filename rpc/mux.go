package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/tlsutil"
)

// DefaultFirstByteTimeout is how long a new connection may stay silent
// before it says its type.
const DefaultFirstByteTimeout = 5 * time.Second

// acceptRetry paces Accept after a failure that may pass (out of file
// descriptors and the like): 5ms doubling up to 1s, as net/http's Server
// does. Not jittered: the wait is for a local resource, not a peer.
var acceptRetry = backoff.Policy{Initial: 5 * time.Millisecond, Max: time.Second, Multiplier: 2}

// Mux accepts connections on one listener and hands each to the handler of
// the type its first byte names. It caps the connections it holds, in all
// and per remote IP (see mux_limits.go): past a cap a new connection is
// closed as soon as it is accepted, so a flood of connections cannot take
// every file descriptor of the process; and it keeps a share of the total
// for raft and servers' connections, so that such a flood cannot lock
// them out.
type Mux struct {
	firstByteTimeout time.Duration
	limits           *connLimits
	// tlsConfig, when set, makes every connection TLS (see WithMuxTLS);
	// requiredRole names the certificate role some types need.
	tlsConfig    func() *tls.Config
	requiredRole map[byte]tlsutil.Role
	// reservedRoles are the certificate roles that may take a reserved
	// place (WithReservedRoles).
	reservedRoles []tlsutil.Role

	logger hclog.Logger
	l      net.Listener

	mu       sync.RWMutex
	handlers map[byte]func(net.Conn)

	// accepted and refused count connections (read by tests today; the
	// metrics endpoint is where they will be exported).
	accepted atomic.Uint64 // every connection accepted, refused ones too
	refused  atomic.Uint64 // connections closed for a cap or a reserved place
	// refuseLog paces the refusals' log lines.
	refuseLog logLimiter
}

// MuxOption configures a Mux.
type MuxOption func(*Mux)

// WithFirstByteTimeout bounds the wait for a new connection's type byte, so
// a silent connection cannot pin a goroutine and a descriptor; d <= 0
// keeps DefaultFirstByteTimeout.
func WithFirstByteTimeout(d time.Duration) MuxOption {
	return func(m *Mux) {
		if d > 0 {
			m.firstByteTimeout = d
		}
	}
}

// WithMaxConns caps the connections the Mux holds at once, of every type;
// n <= 0 removes the cap. The default is half the process's file
// descriptor limit (see DefaultMaxConns).
func WithMaxConns(n int) MuxOption {
	return func(m *Mux) { m.limits.max = max(n, 0) }
}

// WithMaxConnsPerIP caps the connections the Mux holds at once from one
// remote IP; n <= 0 removes the cap. The default is DefaultMaxConnsPerIP,
// or half the total cap when that is lower.
func WithMaxConnsPerIP(n int) MuxOption {
	return func(m *Mux) { m.limits.maxPerIP = max(n, 0) }
}

// WithMuxTLS makes the Mux serve TLS only: a connection must start with
// TypeTLS, complete a TLS handshake with the configuration config returns
// (called once per connection, so that a certificate reload applies to the
// next one), then name its type inside the TLS stream. The handler gets
// the *tls.Conn. A plain-text connection of any type, or a failed
// handshake (no certificate, one from another CA), is refused and logged
// with the peer's address. The first-byte timeout bounds the whole
// preamble: type byte, handshake and inner type byte.
func WithMuxTLS(config func() *tls.Config) MuxOption {
	return func(m *Mux) { m.tlsConfig = config }
}

// WithRequiredRole makes connections of type t acceptable only from a peer
// whose verified certificate has role: raft connections only from servers,
// say. It applies to TLS connections (WithMuxTLS); others are refused
// anyway. A connection refused for its role is logged with its address.
func WithRequiredRole(t byte, role tlsutil.Role) MuxOption {
	return func(m *Mux) {
		if m.requiredRole == nil {
			m.requiredRole = map[byte]tlsutil.Role{}
		}
		m.requiredRole[t] = role
	}
}

// NewMux returns a Mux over l with no handlers.
func NewMux(logger hclog.Logger, l net.Listener, opts ...MuxOption) *Mux {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	m := &Mux{
		firstByteTimeout: DefaultFirstByteTimeout,
		limits:           newConnLimits(),
		reservedRoles:    []tlsutil.Role{tlsutil.RoleServer},
		logger:           logger.Named("rpc_mux"),
		l:                l,
		handlers:         map[byte]func(net.Conn){},
	}
	for _, o := range opts {
		o(m)
	}
	m.limits.setDefaults()
	return m
}

// Handle routes connections of type t to fn. fn runs on its own goroutine,
// owns the conn (the type byte already read) and must close it: closing it
// frees its place under the caps. Serve does not wait for fn, so fn's
// owner must give it a stop path. A later Handle for the same type
// replaces the earlier one.
func (m *Mux) Handle(t byte, fn func(net.Conn)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[t] = fn
}

// Addr is the listener's address.
func (m *Mux) Addr() net.Addr { return m.l.Addr() }

// Serve accepts until ctx ends (it returns nil) or the listener fails or is
// closed by someone else (it returns that error). It closes the listener and
// waits for the first-byte reads it started, never for the handlers.
func (m *Mux) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = m.l.Close() })
	defer stop()
	defer m.l.Close()

	var handshakes sync.WaitGroup
	defer handshakes.Wait()

	m.logger.Info("accepting connections", "addr", m.l.Addr(),
		"max_conns", m.limits.max, "max_conns_per_ip", m.limits.maxPerIP,
		"reserved_conns", m.limits.reserve, "reserved_conns_per_ip", m.limits.reservePerIP,
		"first_byte_timeout", m.firstByteTimeout, "tls", m.tlsConfig != nil)
	failures := 0
	for {
		raw, err := m.l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("rpc: listener %s closed: %w", m.l.Addr(), err)
			}
			// Out of file descriptors and the like: wait and retry.
			failures++
			wait := acceptRetry.Delay(failures)
			m.logger.Error("accept failed", "error", err, "retry_in", wait)
			if !backoff.Sleep(ctx, wait) {
				return nil
			}
			continue
		}
		failures = 0
		m.accepted.Add(1)
		conn, err := m.limits.admit(raw)
		if err != nil {
			m.refuse(raw, err)
			continue
		}
		handshakes.Add(1)
		go func() {
			conn, fn := m.handshake(ctx, conn)
			handshakes.Done()
			if fn != nil {
				fn(conn)
			}
		}()
	}
}

// refuse logs a connection refused for a cap or a reserved place, naming
// the peer, and closes it.
func (m *Mux) refuse(conn net.Conn, cause error) {
	defer conn.Close()
	m.refused.Add(1)
	unlogged, ok := m.refuseLog.allow()
	if !ok {
		return
	}
	args := []any{"remote_addr", remoteAddr(conn), "error", cause}
	if unlogged > 0 {
		args = append(args, "refused_unlogged", unlogged)
	}
	m.logger.Warn("refusing connection", args...)
}

// handshake reads conn's type byte and, under TLS, runs the handshake and
// reads the inner type byte. It returns the connection to serve (the
// *tls.Conn under TLS) and its handler, or closes conn and returns a nil
// handler: for a bad preamble, an unknown type, or a reserved place that
// the connection may not hold.
func (m *Mux) handshake(ctx context.Context, conn *countedConn) (net.Conn, func(net.Conn)) {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(m.firstByteTimeout))
	served, t, ok := m.preamble(ctx, conn)
	if !stop() {
		return nil, nil // Serve is stopping and closed conn
	}
	if !ok {
		_ = conn.Close()
		return nil, nil
	}
	_ = conn.SetDeadline(time.Time{})
	if conn.reserved && !m.mayReserve(t, served) {
		what := "a plain-text connection of type " + connTypeName(t)
		if tc, ok := served.(*tls.Conn); ok {
			what = fmt.Sprintf("a connection of type %s with a certificate of role %q", connTypeName(t), tlsutil.PeerRole(tc.ConnectionState()))
		}
		m.refuse(conn, fmt.Errorf("%w for raft and for certificates of role %v, not %s",
			errReservedConns, m.reservedRoles, what))
		return nil, nil
	}

	m.mu.RLock()
	fn := m.handlers[t]
	m.mu.RUnlock()
	if fn == nil {
		m.logger.Warn("unknown connection type: closing", "type", connTypeName(t), "remote_addr", remoteAddr(conn))
		_ = conn.Close()
		return nil, nil
	}
	return served, fn
}

// preamble reads what comes before a connection's first request: its type
// byte, and under TLS the handshake and the inner type byte. ok is false
// when the connection is to be refused; the reason is logged.
func (m *Mux) preamble(ctx context.Context, conn net.Conn) (served net.Conn, t byte, ok bool) {
	t, err := readType(conn)
	if err != nil {
		m.logNoType(conn, err)
		return nil, 0, false
	}
	if m.tlsConfig == nil {
		if t == TypeTLS {
			m.logger.Warn("refusing tls connection; tls.rpc is off", "remote_addr", remoteAddr(conn))
			return nil, 0, false
		}
		return conn, t, true
	}
	if t != TypeTLS {
		m.logger.Warn("refusing plain-text connection; tls.rpc is on", "remote_addr", remoteAddr(conn), "type", connTypeName(t))
		return nil, 0, false
	}
	tc := tls.Server(conn, m.tlsConfig())
	if err := tc.HandshakeContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, 0, false // Serve is stopping
		}
		m.logger.Warn("refusing connection: tls handshake failed", "remote_addr", remoteAddr(conn), "error", err)
		return nil, 0, false
	}
	if t, err = readType(tc); err != nil {
		m.logNoType(conn, err)
		return nil, 0, false
	}
	if t == TypeTLS {
		m.logger.Warn("refusing connection: tls inside tls", "remote_addr", remoteAddr(conn))
		return nil, 0, false
	}
	if want, ok := m.requiredRole[t]; ok {
		if got := tlsutil.PeerRole(tc.ConnectionState()); got != want {
			m.logger.Warn("refusing connection: certificate role not allowed for this connection type",
				"remote_addr", remoteAddr(conn), "type", connTypeName(t), "role", string(got), "required_role", string(want))
			return nil, 0, false
		}
	}
	return tc, t, true
}

// readType reads one connection type byte.
func readType(conn net.Conn) (byte, error) {
	var b [1]byte
	_, err := io.ReadFull(conn, b[:])
	return b[0], err
}

// logNoType logs a connection that did not say its type.
func (m *Mux) logNoType(conn net.Conn, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		m.logger.Warn("closing connection: no connection type received", "remote_addr", remoteAddr(conn),
			"first_byte_timeout", m.firstByteTimeout)
		return
	}
	m.logger.Debug("no connection type received", "remote_addr", remoteAddr(conn), "error", err)
}
