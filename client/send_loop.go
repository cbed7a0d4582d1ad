package client

import (
	"context"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
)

// sendLoop is the loop of the node updater and the alloc watcher: each
// time kick fires it calls send at once, unless burst sends went out in
// the last window: it then waits until the oldest of them is window old,
// so that under load the changes of that wait go in one send. A change
// made while a send is in flight goes in the next, right after it (the
// send's own time batches them, as raft's group commit does). A failed
// send is logged with failMsg and tried again after a bounded backoff.
// It returns when ctx ends.
func (c *Client) sendLoop(ctx context.Context, kick chan struct{}, window time.Duration, burst int, failMsg string, send func(context.Context) error) {
	failures := 0
	sent := make([]time.Time, max(burst, 1)) // the last sends' start times, a ring
	next := 0                                // the oldest of them
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		if wait := burstWait(sent[next], time.Now(), window); wait > 0 && !backoff.Sleep(ctx, wait) {
			return
		}
		sent[next] = time.Now()
		next = (next + 1) % len(sent)
		err := send(ctx)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := ServerRetry.Delay(failures)
		c.logger.Warn(failMsg, "error", err, "in", wait)
		if !backoff.Sleep(ctx, wait) {
			return
		}
		notify(kick)
	}
}

// burstWait is how long a send waits: until the oldest of the last
// burst sends, which went at oldest, is window old; 0 if it is already
// (or there was none).
func burstWait(oldest, now time.Time, window time.Duration) time.Duration {
	return max(0, window-now.Sub(oldest))
}

// notify wakes a send loop without blocking: a wake-up already pending
// covers this change too.
func notify(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}
