package csi

import (
	"context"

	"google.golang.org/grpc/connectivity"
)

// WatchConnection returns a channel that receives a value whenever the
// connection to the plugin is lost or regained: it left READY (the plugin
// crashed, stopped or closed the connection; gRPC then reports IDLE or
// TRANSIENT_FAILURE), a connection attempt failed (TRANSIENT_FAILURE), or
// it became READY again after a failure. A receiver should re-probe the
// plugin at once instead of waiting for its next probe; the probe decides
// what the change means. Signals are coalesced: the channel holds at most
// one pending value.
//
// The watcher does not reconnect by itself; the next call does. Its
// goroutine ends, and the channel is closed, when ctx ends or the client
// is closed.
func (c *Client) WatchConnection(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	notify := func() {
		select {
		case ch <- struct{}{}:
		default: // one pending signal is enough
		}
	}
	// The state as of the call, not as of the goroutine's start: a loss
	// between the two (Ready, then Idle with no RPC to wake it) would
	// otherwise be the baseline, and never signalled.
	state := c.conn.GetState()
	go func() {
		defer close(ch)
		failed := false
		for state != connectivity.Shutdown {
			if !c.conn.WaitForStateChange(ctx, state) {
				return // ctx ended
			}
			prev := state
			state = c.conn.GetState()
			switch state {
			case connectivity.Shutdown:
			case connectivity.TransientFailure:
				failed = true
				c.logger.Debug("plugin connection failed", "state", state.String())
				notify()
			case connectivity.Ready:
				if failed {
					failed = false
					c.logger.Debug("plugin connection regained")
					notify()
				}
			default: // Idle, Connecting
				if prev == connectivity.Ready {
					failed = true
					c.logger.Debug("plugin connection lost", "state", state.String())
					notify()
				}
			}
		}
	}()
	return ch
}
