package rpc

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/berth-csi/berth/tlsutil"
)

// Peer is who sent a request: the remote address of its connection and,
// over TLS, the role of the certificate the handshake verified.
type Peer struct {
	// Addr is the remote address of the TCP connection.
	Addr string
	// Role is the verified certificate's role; RoleNone without TLS.
	Role tlsutil.Role
	// TLS is whether the connection is TLS.
	TLS bool
}

// peerKey carries the Peer of a request's connection.
type peerKey struct{}

// PeerFromContext returns who sent the current request, when it came over
// a connection (ServeConn, ServeMultiplex, or a Pool's session); an
// in-process Call has none. A server endpoint uses it to tell a server's
// request from a client's (Role).
func PeerFromContext(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// withPeer records conn's peer in ctx, unless ctx has one already (a
// stream of a session whose connection named it).
func withPeer(ctx context.Context, conn net.Conn) context.Context {
	if _, ok := PeerFromContext(ctx); ok {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, connPeer(conn))
}

// connPeer describes conn's peer; conn is a *tls.Conn after its handshake
// when it is TLS.
func connPeer(conn net.Conn) Peer {
	p := Peer{Addr: remoteAddr(conn)}
	if tc, ok := conn.(*tls.Conn); ok {
		cs := tc.ConnectionState()
		p.TLS = cs.HandshakeComplete
		p.Role = tlsutil.PeerRole(cs)
	}
	return p
}
