package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

// conn is one RPC session to one server, shared by the nodes on it.
type conn struct {
	pool *rpc.Pool
	addr string
}

// call calls method on the conn's server, bounded by timeout.
func (c *conn) call(ctx context.Context, timeout time.Duration, method string, args, reply any) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.pool.Call(cctx, c.addr, method, args, reply)
}

// clientStatus answers the servers' ClientStatus calls on the fleet's
// sessions: one session carries many nodes, so the node is the one the
// request names. nodes is not changed after New.
type clientStatus struct{ nodes map[string]*Node }

// Ping answers a server's liveness check of a node, unless the node is
// not the fleet's or was cut (its client is gone).
func (s *clientStatus) Ping(args *structs.NodeSpecificRequest, reply *structs.ClientPingResponse) error {
	n := s.nodes[args.NodeID]
	if n == nil {
		return structs.NewError(structs.CodeNotFound, "fleet: node %s is not on this session", args.NodeID)
	}
	select {
	case <-n.stop:
		return structs.NewError(structs.CodeUnavailable, "fleet: node %s was cut off", n.Name)
	default:
	}
	reply.NodeID, reply.Time = n.ID, time.Now()
	return nil
}

// Ping has the server at addr call node n's client back (the servers'
// ClientStatus.Ping): the server finds the session n's calls came on,
// its own or another server's, and calls the node over it. It checks
// that the answer is n's.
func Ping(ctx context.Context, addr string, n *Node) error {
	p := rpc.NewPool(nil, 1)
	defer p.Shutdown()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var reply structs.ClientPingResponse
	if err := p.Call(cctx, addr, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: n.ID}, &reply); err != nil {
		return fmt.Errorf("fleet: ping node %s through %s: %w", n.Name, addr, err)
	}
	if reply.NodeID != n.ID {
		return fmt.Errorf("fleet: ping node %s (%s) through %s: the answer names node %q", n.Name, n.ID, addr, reply.NodeID)
	}
	return nil
}
