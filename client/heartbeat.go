package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/berth-csi/berth/structs"
)

var timeNow = time.Now

const (
	registerRetryMin = 250 * time.Millisecond
	registerRetryMax = 10 * time.Second
)

// heartbeatLoop registers the node, then heartbeats at about half the TTL
// the servers give. A server that forgot the node (NotFound) gets a fresh
// registration with the whole fingerprint; unreachable servers are failed
// over by rpc, and the loop keeps trying with bounded backoff.
func (c *Client) heartbeatLoop(ctx context.Context) {
	registered := false
	ttl := time.Duration(0)
	backoff := registerRetryMin
	for {
		var (
			resp structs.NodeUpdateResponse
			err  error
		)
		var seq uint64
		if !registered {
			var node *structs.Node
			node, seq = c.node(structs.NodeStatusReady)
			err = c.rpc(ctx, "Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp)
		} else {
			err = c.rpc(ctx, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
				NodeID: c.nodeID, Status: structs.NodeStatusReady}, &resp)
			if errors.Is(err, structs.ErrNotFound) {
				c.logger.Warn("servers do not know this node; registering again")
				registered = false
				continue
			}
		}
		wait := backoff
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Error("cannot reach the servers", "registered", registered, "error", err)
			backoff = min(backoff*2, registerRetryMax)
		} else {
			if !registered {
				c.logger.Info("node registered", "heartbeat_ttl", resp.HeartbeatTTL)
				c.updater.markRegistered(seq)
			}
			registered = true
			backoff = registerRetryMin
			ttl = resp.HeartbeatTTL
			wait = heartbeatInterval(ttl)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// heartbeatInterval is a random point in the middle of the TTL, so many
// clients spread out and one lost heartbeat still leaves time for another.
func heartbeatInterval(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return time.Second
	}
	half := ttl / 2
	return half - half/4 + rand.N(half/2+1)
}
