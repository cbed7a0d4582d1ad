package server

import (
	"context"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// The checks every endpoint makes first (after forwarding: the server that
// serves a request checks it, with the caller's token from the request).
// A refusal names what is missing, never which tokens exist.

// errPermission is the refusal of every check.
func errPermission(format string, args ...any) error {
	return structs.NewError(structs.CodePermissionDenied, "Permission denied: "+format, args...)
}

// allowNamespace checks that token grants capability in namespace ns.
func (s *Server) allowNamespace(token, ns, capability string) error {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return err
	}
	if !a.AllowNamespaceOperation(ns, capability) {
		return errPermission("token lacks capability %q in namespace %q", capability, ns)
	}
	return nil
}

// Scope checks: what an endpoint outside namespaces needs.
type scopeCheck struct {
	name  string // as the refusal says it: `node policy "read"`
	allow func(*acl.ACL) bool
}

var (
	needNodeRead      = scopeCheck{`node policy "read"`, (*acl.ACL).AllowNodeRead}
	needNodeWrite     = scopeCheck{`node policy "write"`, (*acl.ACL).AllowNodeWrite}
	needPluginList    = scopeCheck{`plugin policy "list"`, (*acl.ACL).AllowPluginList}
	needPluginRead    = scopeCheck{`plugin policy "read"`, (*acl.ACL).AllowPluginRead}
	needOperatorRead  = scopeCheck{`operator policy "read"`, (*acl.ACL).AllowOperatorRead}
	needOperatorWrite = scopeCheck{`operator policy "write"`, (*acl.ACL).AllowOperatorWrite}
	needManagement    = scopeCheck{`a management token`, (*acl.ACL).IsManagement}
)

// allowScope checks that token passes one of checks.
func (s *Server) allowScope(token string, checks ...scopeCheck) error {
	a, _, err := s.resolveToken(token)
	if err != nil {
		return err
	}
	for _, c := range checks {
		if c.allow(a) {
			return nil
		}
	}
	names := checks[0].name
	for _, c := range checks[1:] {
		names += " or " + c.name
	}
	return errPermission("token lacks %s", names)
}

// callerIsServer reports whether the request came from another server, as
// far as this server can tell: over TLS, a peer whose verified certificate
// is a server's. Without TLS nothing tells a server from anyone else.
func callerIsServer(ctx context.Context) bool {
	p, ok := rpc.PeerFromContext(ctx)
	return ok && p.TLS && p.Role == tlsutil.RoleServer
}

// allowServerOnly checks a server-to-server call (a relay of a call to a
// client, a root key fetched or pushed). Under tls.rpc the caller must be
// another server by its verified certificate, whatever ACLs say (a
// relaying server dials with its own). Without TLS nothing tells a
// server apart: with ACLs on, the caller holds a management token (a
// leader relaying its own call sends its leader token); with ACLs off the
// cluster trusts its network.
func (s *Server) allowServerOnly(ctx context.Context, method, token string) error {
	if s.tls != nil {
		if callerIsServer(ctx) {
			return nil
		}
		return errPermission("%s is for the servers only; the caller did not present a server certificate (%s)", method, tlsutil.ServerName)
	}
	if s.isManagementToken(token) {
		return nil
	}
	return errPermission("%s is for the servers only; token lacks a management token", method)
}

// actsForNode reports whether token is node nodeID's secret.
func actsForNode(node *structs.Node, token string) bool {
	return node != nil && secretMatches(token, node.SecretHash)
}

// allowNodeClient checks a call only a node's client makes for its node
// (heartbeats, fingerprints, alloc updates, its allocations, publishing a
// volume to it): the token is the node's secret, or, with ACLs on, a
// token with node write (an operator). With ACLs off no caller may act as
// a client for a node without its secret. A node that is not registered,
// or registered before it had a secret, is NotFound, so its client
// registers (again).
func (s *Server) allowNodeClient(st *state.StateStore, nodeID, token string) (asNode bool, err error) {
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return false, err
	}
	if actsForNode(node, token) {
		return true, nil
	}
	if s.config.ACLEnabled {
		if a, _, err := s.resolveToken(token); err == nil && a.AllowNodeWrite() {
			return false, nil
		}
	}
	if node == nil {
		return false, structs.NewError(structs.CodeNotFound, "node %s is not registered; the client must register first", nodeID)
	}
	if node.SecretHash == "" {
		return false, structs.NewError(structs.CodeNotFound, "node %s was registered without a node secret; the client must register again", nodeID)
	}
	return false, errPermission("the request does not carry node %s's secret (a client acts only for its own node), and no token with %s", nodeID, needNodeWrite.name)
}

// allowNodeOperator checks an operator's action on a node that a client
// may also take for itself (deregister): the node's secret, or node
// write (any caller, with ACLs off).
func (s *Server) allowNodeOperator(st *state.StateStore, nodeID, token string) error {
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if actsForNode(node, token) {
		return nil
	}
	return s.allowScope(token, needNodeWrite)
}

// nodeOfSecret returns the registered node whose secret token is, or nil:
// a client's read of what its allocations need.
func (s *Server) nodeOfSecret(st *state.StateStore, token string) (*structs.Node, error) {
	if token == "" {
		return nil, nil
	}
	return st.NodeBySecretHash(nil, hashSecret(token))
}

// trackRegisteredConnAfter tracks the session a registration came on once
// it succeeded: here, or on the leader it was forwarded to, the node was
// stored with the request's token as its secret, so the caller is the
// node's client. Deferred with the request's error.
func (s *Server) trackRegisteredConnAfter(ctx context.Context, nodeID string, forwarded bool, err *error) {
	if *err == nil {
		s.trackNodeConn(ctx, nodeID, forwarded)
	}
}

// trackNodeConnAfter tracks the session a node's request came on once the
// request succeeded, and only if it carried the node's own secret: a token
// with node write acts for a node but is not its client, and must not
// receive the servers' calls to the node (volume secrets among them). The
// leader's success does not say which of the two the caller was, so the
// server the caller reached checks the secret against its own state (a
// node it has not replicated yet is tracked on its next heartbeat).
// Deferred with the request's error.
func (s *Server) trackNodeConnAfter(ctx context.Context, nodeID, token string, forwarded bool, err *error) {
	if *err != nil || forwarded {
		return
	}
	node, lerr := s.State().NodeByID(nil, nodeID)
	if lerr != nil || !actsForNode(node, token) {
		return
	}
	s.trackNodeConn(ctx, nodeID, false)
}

// allowRegisterPeer checks who sends a registration, before it is
// forwarded: over TLS, a client's certificate or a server's (an agent
// that runs a server and a client presents its server certificate; a
// server relays the registrations it checked), never a CLI's. Checked on
// the server the client reached, so going through a follower does not
// skip it. Without TLS nothing tells a client from anyone else.
func allowRegisterPeer(ctx context.Context, nodeID string) error {
	p, ok := rpc.PeerFromContext(ctx)
	if !ok || !p.TLS || p.Role == tlsutil.RoleClient || p.Role == tlsutil.RoleServer {
		return nil
	}
	return errPermission("node %s: only a client (or server) certificate registers a node; %s presented a %q certificate", nodeID, p.Addr, p.Role)
}

// allowNodeRegister checks a node's registration: it must carry a secret,
// the node's own when the node is known (its client's data dir keeps it).
// A node stored before node secrets existed takes the first secret it is
// registered with (the upgrade path), logged. It returns the hash to store.
func (s *Server) allowNodeRegister(ctx context.Context, existing *structs.Node, nodeID, token string) (string, error) {
	if token == "" {
		return "", errPermission("node %s: a node registers with its node secret (the client's data dir keeps it) as the AuthToken; the request has none", nodeID)
	}
	if existing != nil && existing.SecretHash != "" && !secretMatches(token, existing.SecretHash) {
		return "", errPermission("node %s is registered with another secret; restore the client's data dir (client/node-secret), "+
			"or deregister the node (an operator with node write) so it can register anew", nodeID)
	}
	if existing != nil && existing.SecretHash == "" {
		from := "in process"
		if p, ok := rpc.PeerFromContext(ctx); ok {
			from = p.Addr
		}
		s.logger.Warn("node registered before node secrets takes the secret of this registration; "+
			"if its client did not just restart, deregister the node", "node_id", nodeID, "peer", from)
	}
	return hashSecret(token), nil
}
