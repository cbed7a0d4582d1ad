package server

import (
	"context"
	"time"

	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// clientCallTimeout bounds a server-to-client call when the caller set no
// deadline.
const clientCallTimeout = 30 * time.Second

// ClientStatus relays calls to a node's client agent.
type ClientStatus struct{ srv *Server }

// Ping checks that a node's client answers over the session it opened.
func (c *ClientStatus) Ping(ctx context.Context, args *structs.NodeSpecificRequest, reply *structs.ClientPingResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "client ping: missing node ID")
	}
	ctx, cancel := context.WithTimeout(ctx, clientCallTimeout)
	defer cancel()
	return c.srv.callClient(ctx, args.NodeID, "ClientStatus.Ping", "ClientStatus.Ping", args, args, reply)
}

// HasNodeConn reports whether this server holds the node's session. The
// servers ask it of each other to find a client's session before a relay
// (which is checked). Under tls.rpc only a server certificate may ask;
// without TLS nothing tells a server apart, and it tells only whether a
// node is connected here.
func (st *Status) HasNodeConn(ctx context.Context, args *structs.NodeSpecificRequest, reply *bool) error {
	if st.srv.tls != nil && !callerIsServer(ctx) {
		return errPermission("Status.HasNodeConn is for the servers only; the caller did not present a server certificate (%s)", tlsutil.ServerName)
	}
	_, ok := st.srv.nodeConn(args.NodeID)
	*reply = ok
	return nil
}
