package client

import (
	"context"
	"errors"
	"sync"
	"time"

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

// rpc calls a server endpoint, failing over across the servers once.
func (c *Client) rpc(ctx context.Context, method string, args, reply any) error {
	return c.failover(ctx, method, args, reply, c.config.RPCTimeout)
}

// blockingRPC is rpc for a blocking query: each try may take the query's
// wait plus the usual RPC timeout.
func (c *Client) blockingRPC(ctx context.Context, method string, args, reply any, wait time.Duration) error {
	return c.failover(ctx, method, args, reply, wait+c.config.RPCTimeout)
}

// failover calls a server endpoint, each try bounded by timeout, moving to
// the next server while they are unavailable, once round the list.
func (c *Client) failover(ctx context.Context, method string, args, reply any, timeout time.Duration) error {
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
