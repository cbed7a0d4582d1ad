package client

import (
	"context"
	"time"
)

// sendLoop is the loop of the node updater and the alloc watcher: each
// time kick fires it lets changes gather for UpdateCoalesce, then calls
// send; a failed send is logged with failMsg and tried again after a
// bounded backoff. It returns when ctx ends.
func (c *Client) sendLoop(ctx context.Context, kick chan struct{}, failMsg string, send func(context.Context) error) {
	backoff := registerRetryMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		select { // let a burst of changes gather into one send
		case <-ctx.Done():
			return
		case <-time.After(c.config.UpdateCoalesce):
		}
		err := send(ctx)
		if err == nil {
			backoff = registerRetryMin
			continue
		}
		if ctx.Err() != nil {
			return
		}
		c.logger.Warn(failMsg, "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, registerRetryMax)
		notify(kick)
	}
}

// notify wakes a send loop without blocking: a wake-up already pending
// covers this change too.
func notify(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}
