package client

import (
	"context"
	"errors"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

var timeNow = time.Now

// ServerRetry paces the client's loops that talk to the servers (the
// heartbeat, the alloc watch, the send loops) while the servers fail:
// 250ms doubling up to 10s, jittered so that the clients of a cluster do
// not come back at a recovering server in step.
var ServerRetry = backoff.Policy{Initial: 250 * time.Millisecond, Max: 10 * time.Second, Multiplier: 2, Jitter: 0.2}

// heartbeatLoop registers the node, then heartbeats at about half the TTL
// the servers give. A server that forgot the node (NotFound) gets a fresh
// registration with the whole fingerprint; unreachable servers are failed
// over by rpc, and the loop keeps trying with bounded backoff.
func (c *Client) heartbeatLoop(ctx context.Context) {
	registered := false
	ttl := c.fence.knownTTL() // an earlier client's, until the servers answer
	failures := 0
	for {
		var (
			resp structs.NodeUpdateResponse
			err  error
		)
		var seq uint64
		sent := timeNow()
		status := c.status()
		if !registered {
			var node *structs.Node
			node, seq = c.node(status)
			err = c.failover(ctx, "Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp, c.heartbeatTimeout(ttl))
		} else {
			err = c.failover(ctx, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
				NodeID: c.nodeID, Status: status}, &resp, c.heartbeatTimeout(ttl))
			if errors.Is(err, structs.ErrNotFound) {
				c.logger.Warn("servers do not know this node; registering again")
				registered = false
				continue
			}
		}
		c.heartbeatTried.Store(true)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The error says which server and why: unreachable, or
			// reachable without a leader (after the leader died), which
			// passes with the election.
			what := "heartbeat failed; retrying"
			if !registered {
				what = "registration failed; retrying"
			}
			failures++
			wait = ServerRetry.Delay(failures)
			c.logger.Error(what, "retry_in", wait, "error", err)
		} else {
			if !registered {
				c.logger.Info("node registered", "status", status, "heartbeat_ttl", resp.HeartbeatTTL)
				c.updater.markRegistered(seq)
				c.registeredOnce.Do(func() { close(c.registered) })
			}
			registered = true
			failures = 0
			ttl = resp.HeartbeatTTL
			if err := c.fence.contact(sent, ttl); err != nil {
				c.logger.Warn("cannot record the last contact with the servers; a restart while cut off would not fence", "error", err)
			}
			wait = heartbeatInterval(ttl)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-c.settledKick: // settled: say ready now
		}
	}
}

// heartbeatInterval is structs.HeartbeatInterval: a random point between
// a sixth and a quarter of the TTL, so that many clients spread out and,
// before the fence interval (half the TTL) has passed, a lost heartbeat
// still leaves time for another try on the next server.
var heartbeatInterval = structs.HeartbeatInterval

// heartbeatTimeout bounds one heartbeat try on one server: an eighth of
// the TTL (at least half a second, at most the RPC timeout), so that a
// server that stopped answering is failed over well within the fence
// interval.
func (c *Client) heartbeatTimeout(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return c.config.RPCTimeout
	}
	return min(max(ttl/8, 500*time.Millisecond), c.config.RPCTimeout)
}
