package server

import (
	"context"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// authorizeKeyFetch lets only another server have root key material:
//
//   - over TLS, the peer's verified certificate must be a server's
//     (server.global.berth); a client's or the CLI's is refused;
//   - when this server runs RPC over TLS, anything else (plain text, an
//     in-process call from the HTTP API) is refused;
//   - without TLS nothing can tell a server from anyone else: with ACLs on
//     only a management token may ask; with ACLs off the cluster trusts
//     its network (as raft itself does then).
func (s *Server) authorizeKeyFetch(ctx context.Context, token string) error {
	peer, ok := rpc.PeerFromContext(ctx)
	if ok && peer.TLS {
		if peer.Role == tlsutil.RoleServer {
			return nil
		}
		return structs.NewError(structs.CodePermissionDenied,
			"Keyring.GetKey: only a server may fetch root keys; %s presented a %q certificate, not a server's", peer.Addr, peer.Role)
	}
	if s.keyFetchNeedsTLS() {
		return structs.NewError(structs.CodePermissionDenied,
			"Keyring.GetKey: only a server may fetch root keys, over TLS with its server certificate")
	}
	if s.config.ACLEnabled && !s.keyFetchTokenIsManagement(token) {
		return structs.NewError(structs.CodePermissionDenied,
			"Keyring.GetKey: only a server may fetch root keys (with ACLs on and no TLS, a management token)")
	}
	return nil
}

// keyFetchNeedsTLS reports whether this server serves RPC over TLS
// (tls { rpc = true }), so a key may leave it only over a verified server
// connection.
func (s *Server) keyFetchNeedsTLS() bool { return s.tls != nil }

// keyFetchTokenIsManagement reports whether token is a management token.
// With ACLs on and RPC in plain text, servers hold none to send, so they
// cannot fetch keys from each other: run such a cluster with tls.rpc.
func (s *Server) keyFetchTokenIsManagement(token string) bool { return s.isManagementToken(token) }
