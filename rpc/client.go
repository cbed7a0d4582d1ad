package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/berth-csi/berth/structs"
)

// dialTimeout caps a dial whose ctx has no sooner deadline.
const dialTimeout = 10 * time.Second

// callSeq numbers requests; responses must echo the number.
var callSeq atomic.Uint64

// DialOption configures Dial.
type DialOption func(*dialConfig)

type dialConfig struct {
	tls     func() *tls.Config
	localIP net.IP
}

// WithDialLocalIP makes Dial connect from ip (a server's bind address; see
// WithLocalIP), so that the connection comes from the address the node is
// known by. An empty or unspecified address lets the system choose.
func WithDialLocalIP(ip string) DialOption {
	return func(c *dialConfig) { c.localIP = bindIP(ip) }
}

// SourceAddr is the local address to dial addr (host:port) from when the
// node's bind address is ip, following the rules of WithLocalIP: nil lets
// the system choose. For dialers outside this package (gossip).
func SourceAddr(ip, addr string) *net.TCPAddr {
	if src := sourceFor(bindIP(ip), addr); src != nil {
		return &net.TCPAddr{IP: src}
	}
	return nil
}

// WithDialTLS makes Dial speak TLS (see WithMuxTLS): it writes TypeTLS,
// runs a client handshake with the configuration config returns, then
// writes the connection type inside TLS. config is called per dial, so a
// certificate reload applies to the next connection.
func WithDialTLS(config func() *tls.Config) DialOption {
	return func(c *dialConfig) { c.tls = config }
}

// Dial opens a TCP connection to addr and writes connType, honouring ctx's
// deadline; with WithDialTLS the connection is TLS and the returned conn a
// *tls.Conn. The caller owns the returned conn. Errors are Unavailable.
func Dial(ctx context.Context, addr string, connType byte, opts ...DialOption) (net.Conn, error) {
	var dc dialConfig
	for _, o := range opts {
		o(&dc)
	}
	conn, err := dial(ctx, addr, connType, dc.localIP, dc.tls)
	if err != nil {
		return nil, structs.NewError(structs.CodeUnavailable, "rpc: dial %s (%s): %v", addr, connTypeName(connType), err)
	}
	return conn, nil
}

// dial connects from localIP when it is set (see sourceFor), over TLS when
// tlsConfig is set.
func dial(ctx context.Context, addr string, connType byte, localIP net.IP, tlsConfig func() *tls.Config) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	if src := sourceFor(localIP, addr); src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(dialTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = raw.SetDeadline(deadline)
	conn, err := preamble(ctx, raw, connType, tlsConfig)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	return conn, nil
}

// preamble writes what precedes a connection's first request: its type,
// and under TLS the TLS type byte and the handshake first.
func preamble(ctx context.Context, raw net.Conn, connType byte, tlsConfig func() *tls.Config) (net.Conn, error) {
	if tlsConfig == nil {
		_, err := raw.Write([]byte{connType})
		return raw, err
	}
	if _, err := raw.Write([]byte{TypeTLS}); err != nil {
		return nil, err
	}
	cfg := tlsConfig()
	if cfg == nil {
		return nil, errors.New("tls is on but there is no TLS configuration")
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	if _, err := tc.Write([]byte{connType}); err != nil {
		return nil, err
	}
	return tc, nil
}

// CallConn makes one call on conn, a TypeRPC connection (or a stream), and
// waits for its answer. One call at a time per conn. If ctx ends first,
// conn is closed (a late answer would put the conn out of step). A call
// that got no answer is Unavailable when its request was never sent, and
// Indeterminate once it was (see transportError). A method's error comes
// back with its code.
func CallConn(ctx context.Context, conn net.Conn, method string, args, reply any) error {
	return coded(roundTrip(ctx, conn, method, args, reply), method, remoteAddr(conn))
}

// CallSession opens a stream on session, makes one call on it and closes
// it: how a server calls back a client over the session the client opened,
// and how the Pool calls a server. Errors are as for CallConn.
func CallSession(ctx context.Context, session *yamux.Session, method string, args, reply any) error {
	peer := session.RemoteAddr().String()
	st, err := session.Open()
	if err != nil {
		return unavailable(method, peer, err)
	}
	defer st.Close()
	return coded(roundTrip(ctx, st, method, args, reply), method, peer)
}

// ended returns ctx's error, or DeadlineExceeded once its deadline has
// passed even if its timer has not fired yet.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// transportError marks a call that got no answer: the request or the
// response did not make it, or ctx ended first. sent says whether the far
// side may have read the whole request, and so may have run it. It never
// leaves the package; coded turns it into an Unavailable *structs.Error
// when the request was not sent, an Indeterminate one when it was.
type transportError struct {
	cause error
	sent  bool
}

var _ error = (*transportError)(nil)

func (e *transportError) Error() string { return e.cause.Error() }
func (e *transportError) Unwrap() error { return e.cause }

// coded turns a transport error into an Unavailable or Indeterminate error
// naming method and peer; other errors are coded already.
func coded(err error, method, peer string) error {
	var te *transportError
	if !errors.As(err, &te) {
		return err
	}
	if te.sent {
		return indeterminate(method, peer, te.cause)
	}
	return unavailable(method, peer, te.cause)
}

// writeMaySend reports whether a Write that failed with err may still have
// delivered the whole request. A failed Write on a connection leaves the
// frame short, and the server never runs a request it did not read whole
// (readFrame); but a yamux stream's Write that gives up waiting on its
// session (shut down, or too slow to write) leaves the data queued, and
// the session may send it after Write returned.
func writeMaySend(err error) bool {
	return errors.Is(err, yamux.ErrSessionShutdown) || errors.Is(err, yamux.ErrConnectionWriteTimeout)
}

// roundTrip writes one request and reads its response. It returns nil, a
// *transportError, or a coded error: the method's own, or a bad args or
// reply encoding. Once conn.Write returns, the request is sent: whatever
// goes wrong after it leaves the server's answer unknown.
func roundTrip(ctx context.Context, conn net.Conn, method string, args, reply any) (err error) {
	body, err := encode(args)
	if err != nil {
		return structs.NewError(structs.CodeBadRequest, "rpc: %s: encode args: %v", method, err)
	}
	if err := ctx.Err(); err != nil {
		return &transportError{cause: err}
	}
	h := header{ServiceMethod: method, Seq: callSeq.Add(1)}
	if dl, ok := ctx.Deadline(); ok {
		h.Timeout = max(int64(time.Until(dl)), 1)
	}
	frame, err := appendFrame(nil, &h, body)
	if err != nil {
		return structs.NewError(structs.CodeBadRequest, "rpc: %s: args: %v", method, err)
	}

	// On cancel, wake a blocked read or write and give up the conn. A yamux
	// stream's Close does not wake its own reader; the deadline does.
	stop := context.AfterFunc(ctx, func() {
		_ = conn.SetDeadline(time.Now())
		_ = conn.Close()
	})
	defer stop()
	// fail gives up the conn, which is out of step now, and names the
	// cause: ctx ending, if it did, since the close above follows from it.
	fail := func(cause error, sent bool) error {
		_ = conn.Close()
		if ctxErr := ended(ctx); ctxErr != nil {
			cause = ctxErr
		}
		return &transportError{cause: cause, sent: sent}
	}

	if _, err := conn.Write(frame); err != nil {
		return fail(err, writeMaySend(err))
	}
	rh, rbody, err := readFrame(conn)
	if err != nil {
		return fail(err, true)
	}
	if rh.Seq != h.Seq {
		return fail(errSeqMismatch, true)
	}
	if rerr := remoteError(&rh); rerr != nil {
		if ended(ctx) != nil {
			// The method gave up because we did (the server learns of a
			// deadline from the header, of a cancel from the stream
			// closing): report our ctx, not its echo.
			return fail(rerr, true)
		}
		return rerr
	}
	if reply != nil {
		if err := decodeBody(rbody, reply); err != nil {
			return structs.NewError(structs.CodeInternal, "rpc: %s: decode reply from %s: %v", method, remoteAddr(conn), err)
		}
	}
	return nil
}

// bindIP is an agent's bind address as a source to dial from: nil, to let
// the system choose, when it is empty, not an IP, or unspecified (0.0.0.0,
// ::).
func bindIP(ip string) net.IP {
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.IsUnspecified() {
		return nil
	}
	return parsed
}

// sourceFor is the address to dial addr (host:port) from: localIP, or nil
// to let the system choose when localIP is nil, of the other IP family
// than addr's, or a loopback address while addr is not one (an agent left
// on the default bind address, with servers on other hosts).
func sourceFor(localIP net.IP, addr string) net.IP {
	if localIP == nil {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	dst := net.ParseIP(host)
	switch {
	case err != nil || dst == nil: // a name: its family is not known yet
		if localIP.IsLoopback() {
			return nil
		}
	case (localIP.To4() != nil) != (dst.To4() != nil):
		return nil
	case localIP.IsLoopback() && !dst.IsLoopback():
		return nil
	}
	return localIP
}
