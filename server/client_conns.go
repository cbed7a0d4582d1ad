package server

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

// nodeConns remembers, per node, the yamux session its client opened to
// this server, so the server can call the client back on it. A session
// leaves the map when it closes: one goroutine per session watches for
// that, whatever number of nodes it carries, so a fleet costs the server
// no goroutine per node.
type nodeConns struct {
	mu    sync.RWMutex
	conns map[string]*yamux.Session
	// watched are the sessions a goroutine waits on, with the nodes
	// tracked on each.
	watched map[*yamux.Session]map[string]bool
}

func newNodeConns() *nodeConns {
	return &nodeConns{conns: map[string]*yamux.Session{}, watched: map[*yamux.Session]map[string]bool{}}
}

// track records the session a client's request arrived on. Requests that
// another server forwarded carry that server's session, not the client's,
// and in-process calls carry none; both are ignored.
func (s *Server) trackNodeConn(ctx context.Context, nodeID string, forwarded bool) {
	if forwarded || nodeID == "" {
		return
	}
	sess, ok := rpc.SessionFromContext(ctx)
	if !ok {
		return
	}
	nc := s.nodeConns
	nc.mu.Lock()
	if nc.conns[nodeID] == sess {
		nc.mu.Unlock()
		return
	}
	if old := nc.conns[nodeID]; old != nil {
		delete(nc.watched[old], nodeID)
	}
	nc.conns[nodeID] = sess
	nodes, watched := nc.watched[sess]
	if !watched {
		nodes = map[string]bool{}
		nc.watched[sess] = nodes
	}
	nodes[nodeID] = true
	nc.mu.Unlock()
	s.logger.Debug("client session tracked", "node_id", nodeID)
	if watched {
		return
	}
	s.goFunc(func() {
		select {
		case <-sess.CloseChan():
		case <-s.ctx.Done():
			return
		}
		nc.mu.Lock()
		for id := range nc.watched[sess] {
			if nc.conns[id] == sess {
				delete(nc.conns, id)
			}
		}
		delete(nc.watched, sess)
		nc.mu.Unlock()
	})
}

func (s *Server) nodeConn(nodeID string) (*yamux.Session, bool) {
	s.nodeConns.mu.RLock()
	defer s.nodeConns.mu.RUnlock()
	sess, ok := s.nodeConns.conns[nodeID]
	if ok && sess.IsClosed() {
		return nil, false
	}
	return sess, ok
}

// callClient calls method on a node's client: over this server's session
// with it when there is one, otherwise through the server that holds it
// (found by asking every other server). serverMethod is this server's
// endpoint that relays the call, so the holder receives the same request.
// The client never gets a token; the holder gets the caller's, or this
// leader's for a call of its own (relayToken).
func (s *Server) callClient(ctx context.Context, nodeID, clientMethod, serverMethod string, info rpcInfo, args, reply any) error {
	if sess, ok := s.nodeConn(nodeID); ok {
		stripToken(args)
		return rpc.CallSession(ctx, sess, clientMethod, args, reply)
	}
	if info.IsForwarded() {
		return structs.NewError(structs.CodeNotFound, "node %s is not connected to server %s", nodeID, s.config.NodeName)
	}
	holder, err := s.findNodeConn(ctx, nodeID)
	if err != nil {
		return err
	}
	info.SetForwarded()
	s.relayToken(args)
	return s.pool.Call(ctx, holder, serverMethod, args, reply)
}

// findNodeConn asks the other servers which one holds the node's session.
func (s *Server) findNodeConn(ctx context.Context, nodeID string) (string, error) {
	for _, m := range s.servers() {
		if m.ID == s.id || m.Status.String() != "alive" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var has bool
		err := s.pool.Call(cctx, m.RPCAddr, "Status.HasNodeConn", &structs.NodeSpecificRequest{NodeID: nodeID}, &has)
		cancel()
		if err == nil && has {
			return m.RPCAddr, nil
		}
	}
	return "", structs.NewError(structs.CodeUnavailable,
		"node %s is not connected to any server: is its client running and able to reach the servers?", nodeID)
}
