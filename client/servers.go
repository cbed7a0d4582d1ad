package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/structs"
)

// servers is the client's list of servers and the one it uses now. A call
// that cannot reach a server (Unavailable) moves on to the next; every
// other error is the answer.
type servers struct {
	mu      sync.Mutex
	addrs   []string
	current int
}

func (s *servers) pick() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[s.current], s.current
}

// failed moves off server i, unless another call already did.
func (s *servers) failed(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == i {
		s.current = (s.current + 1) % len(s.addrs)
	}
}

func (s *servers) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.addrs)
}

// rpc calls a server endpoint for this node, failing over across the
// servers once.
func (c *Client) rpc(ctx context.Context, method string, args, reply any) error {
	return c.failover(ctx, method, args, reply, c.config.RPCTimeout)
}

// blockingRPC is rpc for a blocking query: each try may take the query's
// wait plus the usual RPC timeout.
func (c *Client) blockingRPC(ctx context.Context, method string, args, reply any, wait time.Duration) error {
	return c.failover(ctx, method, args, reply, wait+c.config.RPCTimeout)
}

// authToken is what every request carries of its caller's token.
type authToken interface {
	SetAuthToken(string)
}

// failover calls a server endpoint for this node: the request carries the
// node's secret as its AuthToken (the servers refuse a node's calls
// without it). Every call the client makes for itself goes through here.
func (c *Client) failover(ctx context.Context, method string, args, reply any, timeout time.Duration) error {
	if a, ok := args.(authToken); ok {
		a.SetAuthToken(c.nodeSecret)
	}
	return c.callServers(ctx, method, args, reply, timeout)
}

// nodeRPC is the client's calls for its node, as allocrunner.RPCer: the
// allocation runners' reads and claims carry the node's secret.
type nodeRPC struct{ c *Client }

var _ allocrunner.RPCer = nodeRPC{}

// RPC calls a server endpoint for the node, with failover.
func (n nodeRPC) RPC(ctx context.Context, method string, args, reply any) error {
	return n.c.rpc(ctx, method, args, reply)
}

// callServers calls a server endpoint with args as they are, each try
// bounded by timeout, moving to the next server while they are
// unavailable, once round the list.
func (c *Client) callServers(ctx context.Context, method string, args, reply any, timeout time.Duration) error {
	var last error
	for tries := 0; tries < c.servers.len(); tries++ {
		addr, i := c.servers.pick()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.pool.Call(cctx, addr, method, args, reply)
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, structs.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		c.logger.Warn("server unavailable; trying the next", "server", addr, "method", method, "error", err)
		c.servers.failed(i)
		last = err
	}
	return last
}
