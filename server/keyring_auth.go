package server

import (
	"context"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// authorizeKeyAccess lets only another server read or write root key
// material (method is Keyring.GetKey or Keyring.PutKey):
//
//   - over TLS, the peer's verified certificate must be a server's
//     (server.global.berth); a client's or the CLI's is refused;
//   - when this server runs RPC over TLS, anything else (plain text, an
//     in-process call from the HTTP API) is refused;
//   - without TLS nothing can tell a server from anyone else: with ACLs on
//     only a management token may ask; with ACLs off the cluster trusts
//     its network (as raft itself does then).
func (s *Server) authorizeKeyAccess(ctx context.Context, method, token string) error {
	peer, ok := rpc.PeerFromContext(ctx)
	if ok && peer.TLS {
		if peer.Role == tlsutil.RoleServer {
			return nil
		}
		return structs.NewError(structs.CodePermissionDenied,
			"%s: only a server may handle root keys; %s presented a %q certificate, not a server's", method, peer.Addr, peer.Role)
	}
	if s.keyAccessNeedsTLS() {
		return structs.NewError(structs.CodePermissionDenied,
			"%s: only a server may handle root keys, over TLS with its server certificate", method)
	}
	if s.config.ACLEnabled && !s.keyAccessTokenIsManagement(token) {
		return structs.NewError(structs.CodePermissionDenied,
			"%s: only a server may handle root keys (with ACLs on and no TLS, a management token)", method)
	}
	return nil
}

// keyAccessNeedsTLS reports whether this server serves RPC over TLS
// (tls { rpc = true }), so key material may move only over a verified
// server connection.
func (s *Server) keyAccessNeedsTLS() bool { return s.tls != nil }

// keyAccessTokenIsManagement reports whether token is a management token.
// With ACLs on and RPC in plain text, a leader sends its leader token with
// the keys it pushes (Keyring.PutKey), but the other servers hold none to
// fetch keys with (Keyring.GetKey): run such a cluster with tls.rpc.
func (s *Server) keyAccessTokenIsManagement(token string) bool { return s.isManagementToken(token) }
