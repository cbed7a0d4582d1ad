package csi

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a bounded exponential backoff with jitter.
type Backoff struct {
	Initial     time.Duration // the first delay; 100ms if not positive
	Max         time.Duration // no delay is longer; 30s if not positive
	Multiplier  float64       // growth per attempt; 2 if below 1
	Jitter      float64       // each delay is randomly shortened by up to this fraction, in [0, 1]
	MaxAttempts int           // give up after this many calls; 0 means until ctx ends
}

// DefaultBackoff is 100ms doubling up to 30s, with 20% jitter, until the
// context ends.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.2}
}

// Delay is the wait after the attempt-th failure (attempt counts from 1).
func (b Backoff) Delay(attempt int) time.Duration {
	initial, maxDelay, mult := b.Initial, b.Max, b.Multiplier
	if initial <= 0 {
		initial = 100 * time.Millisecond
	}
	if maxDelay <= 0 {
		maxDelay = 30 * time.Second
	}
	if mult < 1 {
		mult = 2
	}
	d := float64(initial)
	for i := 1; i < attempt && d < float64(maxDelay); i++ {
		d *= mult
	}
	d = min(d, float64(maxDelay))
	if j := min(max(b.Jitter, 0), 1); j > 0 {
		d -= d * j * rand.Float64()
	}
	return time.Duration(d)
}

// Retry calls fn until it succeeds, fails with a final error (IsFinal),
// has been called MaxAttempts times, or ctx ends, waiting policy.Delay
// between calls. It returns nil or fn's last error; if ctx ended first,
// the last error (or ctx's error if fn never ran) is returned as is, so
// callers still see what the plugin said.
func Retry(ctx context.Context, policy Backoff, fn func(context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if ctxErr := ctx.Err(); ctxErr != nil {
			if err == nil {
				return ctxErr
			}
			return err
		}
		if err = fn(ctx); err == nil || IsFinal(err) {
			return err
		}
		if policy.MaxAttempts > 0 && attempt >= policy.MaxAttempts {
			return err
		}
		t := time.NewTimer(policy.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
