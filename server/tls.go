package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/tlsutil"
)

// memberCheckTimeout bounds the TLS check of a new server (verifyMember).
const memberCheckTimeout = 5 * time.Second

// setupTLS loads the certificates when tls.rpc is on.
func (s *Server) setupTLS() error {
	if s.config.TLS == nil || !s.config.TLS.EnableRPC {
		return nil
	}
	conf, err := tlsutil.NewConfigurator(*s.config.TLS)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.tls = conf
	return nil
}

// verifyServerHostname reports whether only server certificates may act
// as servers (raft, forwarding, joining raft).
func (s *Server) verifyServerHostname() bool {
	return s.tls != nil && s.config.TLS.VerifyServerHostname
}

// outgoingTLS is the configuration of the server's dials, nil without TLS.
func (s *Server) outgoingTLS() func() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.OutgoingRPC
}

// muxOptions serves TLS only when tls.rpc is on; with
// verify_server_hostname raft connections only from server certificates.
func (s *Server) muxOptions() []rpc.MuxOption {
	if s.tls == nil {
		return nil
	}
	opts := []rpc.MuxOption{rpc.WithMuxTLS(s.tls.IncomingRPC)}
	if s.verifyServerHostname() {
		opts = append(opts, rpc.WithRequiredRole(rpc.TypeRaft, tlsutil.RoleServer))
	}
	return opts
}

// rpcServerOptions: with verify_server_hostname, only server certificates
// may forward requests.
func (s *Server) rpcServerOptions() []rpc.ServerOption {
	if !s.verifyServerHostname() {
		return nil
	}
	return []rpc.ServerOption{rpc.WithForwardedRole(tlsutil.RoleServer)}
}

// poolOptions dials TLS when tls.rpc is on.
func (s *Server) poolOptions() []rpc.PoolOption {
	if s.tls == nil {
		return nil
	}
	return []rpc.PoolOption{rpc.WithPoolTLS(s.tls.OutgoingRPC)}
}

// ReloadTLS reads the CA, certificate and key files again (SIGHUP): new
// connections, incoming and outgoing, use them; open ones keep theirs. On
// an error the server keeps the certificates it had. Without tls.rpc
// there is nothing to reload and it returns nil.
func (s *Server) ReloadTLS() error {
	if s.tls == nil {
		return nil
	}
	if err := s.tls.Reload(); err != nil {
		return fmt.Errorf("server: reload TLS certificates: %w", err)
	}
	s.logger.Info("tls certificates reloaded", "cert_file", s.config.TLS.CertFile)
	return nil
}

// peerIsServer reports whether the request in ctx came from another
// server, as far as this server can tell: with tls.rpc and
// verify_server_hostname, only over a connection whose verified
// certificate is a server's; without them any network peer may be a
// server (nothing tells them apart), so it is true for every request
// that came over a connection. An in-process call (this server's HTTP API)
// is not from another server: false.
func (s *Server) peerIsServer(ctx context.Context) bool {
	peer, ok := rpc.PeerFromContext(ctx)
	if !ok {
		return false
	}
	if !s.verifyServerHostname() {
		return true
	}
	return peer.TLS && peer.Role == tlsutil.RoleServer
}

// verifyMember checks, before a gossip member joins raft, that its RPC
// address answers a TLS handshake with a server certificate of our CA, so
// that a member of gossip that holds only a client certificate (or none)
// never becomes a voter. Without verify_server_hostname there is nothing
// to check it against, and it returns nil.
func (s *Server) verifyMember(ctx context.Context, m serverMember) error {
	if !s.verifyServerHostname() || m.ID == s.id {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, memberCheckTimeout)
	defer cancel()
	conn, err := rpc.Dial(ctx, m.RPCAddr, rpc.TypeRPC, rpc.WithDialTLS(s.tls.OutgoingRPC))
	if err != nil {
		return fmt.Errorf("gossip member %s at %s did not present a server certificate: %w", m.Name, m.RPCAddr, err)
	}
	_ = conn.Close()
	return nil
}
