package client

import (
	"context"
	"errors"
	"sync"

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
	var last error
	for tries := 0; tries < c.servers.len(); tries++ {
		addr, i := c.servers.pick()
		cctx, cancel := context.WithTimeout(ctx, c.config.RPCTimeout)
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
