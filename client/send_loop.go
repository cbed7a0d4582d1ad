package client

import (
	"context"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
)

// sendLoop is the loop of the node updater and the alloc watcher: each
// time kick fires it calls send, at once when the loop is idle (no send
// in the last window), else once window has passed since the last, so
// that under load the changes of that window go in one send;
// a failed send is logged with failMsg and tried again after a bounded
// backoff. It returns when ctx ends.
func (c *Client) sendLoop(ctx context.Context, kick chan struct{}, window time.Duration, failMsg string, send func(context.Context) error) {
	failures := 0
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		if wait := window - time.Since(last); wait > 0 && !backoff.Sleep(ctx, wait) {
			return
		}
		last = time.Now()
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
