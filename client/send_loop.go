package client

import (
	"context"

	"github.com/berth-csi/berth/internal/backoff"
)

// sendLoop is the loop of the node updater and the alloc watcher: each
// time kick fires it lets changes gather for UpdateCoalesce, then calls
// send; a failed send is logged with failMsg and tried again after a
// bounded backoff. It returns when ctx ends.
func (c *Client) sendLoop(ctx context.Context, kick chan struct{}, failMsg string, send func(context.Context) error) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		if !backoff.Sleep(ctx, c.config.UpdateCoalesce) { // let a burst of changes gather into one send
			return
		}
		err := send(ctx)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := serverRetry.Delay(failures)
		c.logger.Warn(failMsg, "error", err, "in", wait)
		if !backoff.Sleep(ctx, wait) {
			return
		}
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
