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

// outgoingTLS is the configuration of the server's dials, nil without TLS.
// With verify_server_hostname they accept only a server certificate.
func (s *Server) outgoingTLS() func() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.OutgoingRPC
}

// Under tls.rpc, whatever verify_server_hostname says, only a verified
// server certificate (server.global.berth) may act as a server: open a raft
// connection (muxOptions), forward a request (rpcServerOptions), call a
// server-only endpoint (allowServerOnly, callerIsServer), fetch or push a
// root key (allowServerOnly) or be added to raft (verifyMember). A client
// certificate is of the same CA, so the chain alone proves nothing.

// muxOptions serves TLS only when tls.rpc is on, and then raft connections
// only from server certificates; and keeps the places the Mux reserves
// (rpc.WithReservedConns) for raft, servers and, under TLS, client agents:
// a flood of connections without a certificate of the CA then locks out
// neither the raft peers nor the nodes' sessions. (Without TLS a node is
// not known before its first request, so only raft connections get them.)
func (s *Server) muxOptions() []rpc.MuxOption {
	if s.tls == nil {
		return nil
	}
	return []rpc.MuxOption{
		rpc.WithMuxTLS(s.tls.IncomingRPC),
		rpc.WithRequiredRole(rpc.TypeRaft, tlsutil.RoleServer),
		rpc.WithReservedRoles(tlsutil.RoleServer, tlsutil.RoleClient),
	}
}

// rpcServerOptions: under tls.rpc only server certificates may forward
// requests.
func (s *Server) rpcServerOptions() []rpc.ServerOption {
	if s.tls == nil {
		return nil
	}
	return []rpc.ServerOption{rpc.WithForwardedRole(tlsutil.RoleServer)}
}

// poolOptions dials from the bind address, and TLS when tls.rpc is on.
func (s *Server) poolOptions() []rpc.PoolOption {
	opts := []rpc.PoolOption{rpc.WithLocalIP(s.config.BindAddr)}
	if s.tls == nil {
		return opts
	}
	return append(opts, rpc.WithPoolTLS(s.tls.OutgoingRPC))
}

// PrepareReloadTLS reads and checks the CA, certificate and key files
// again without using them (SIGHUP): commit makes new connections,
// incoming and outgoing, use them; open ones keep theirs. The agent prepares every part
// it reloads before it commits any, so that a SIGHUP reloads all or none.
// On an error nothing changes. Without tls.rpc commit does nothing.
func (s *Server) PrepareReloadTLS() (commit func(), err error) {
	if s.tls == nil {
		return func() {}, nil
	}
	commit, err = s.tls.PrepareReload()
	if err != nil {
		return nil, fmt.Errorf("server: reload TLS certificates: %w", err)
	}
	return commit, nil
}

// verifyMember checks, before a gossip member joins raft, that its RPC
// address answers a TLS handshake with a server certificate of our CA
// (server.global.berth, whatever verify_server_hostname says), so that a
// member of gossip that holds only a client certificate (or none) never
// becomes a voter. Without tls.rpc there is nothing to check it against,
// and it returns nil.
func (s *Server) verifyMember(ctx context.Context, m serverMember) error {
	if s.tls == nil || m.ID == s.id {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, memberCheckTimeout)
	defer cancel()
	conn, err := rpc.Dial(ctx, m.RPCAddr, rpc.TypeRPC, rpc.WithDialLocalIP(s.config.BindAddr), rpc.WithDialTLS(s.tls.OutgoingServerRPC))
	if err != nil {
		return fmt.Errorf("gossip member %s at %s did not present a server certificate: %w", m.Name, m.RPCAddr, err)
	}
	_ = conn.Close()
	return nil
}
