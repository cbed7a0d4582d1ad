package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	cenkalti "github.com/cenkalti/backoff/v5"
)

// Policy is a bounded exponential backoff with jitter.
type Policy struct {
	Initial     time.Duration // the first delay; 100ms if not positive
	Max         time.Duration // no delay is longer; 30s if not positive
	Multiplier  float64       // growth per attempt; 2 if below 1
	Jitter      float64       // each delay is randomly shortened by up to this fraction, in [0, 1]
	MaxAttempts int           // give up after this many calls; 0 means until ctx ends
}

func (p Policy) normalized() Policy {
	if p.Initial <= 0 {
		p.Initial = 100 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	p.Jitter = min(max(p.Jitter, 0), 1)
	return p
}

// Delay is the wait after the attempt-th failure (attempt counts from 1).
func (p Policy) Delay(attempt int) time.Duration {
	p = p.normalized()
	d := float64(p.Initial)
	for i := 1; i < attempt && d < float64(p.Max); i++ {
		d *= p.Multiplier
	}
	d = min(d, float64(p.Max))
	if p.Jitter > 0 {
		d -= d * p.Jitter * rand.Float64()
	}
	return time.Duration(d)
}

// sequence makes a Policy a cenkalti BackOff by counting attempts.
type sequence struct {
	policy  Policy
	attempt int
}

func (s *sequence) NextBackOff() time.Duration {
	s.attempt++
	return s.policy.Delay(s.attempt)
}

func (s *sequence) Reset() { s.attempt = 0 }

// Retry calls fn until it succeeds, fails with an error final says is not
// worth retrying (final may be nil: every error is retried), has been
// called MaxAttempts times, or ctx ends, waiting p.Delay between calls. It
// returns nil or fn's last error, as is (never wrapped); if ctx ended
// first, that is still fn's last error (ctx's error only if fn never ran),
// so callers still see what the other side said.
func Retry(ctx context.Context, p Policy, final func(error) bool, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var last error
	opts := []cenkalti.RetryOption{
		cenkalti.WithBackOff(&sequence{policy: p}),
		cenkalti.WithMaxElapsedTime(0),
	}
	if p.MaxAttempts > 0 {
		opts = append(opts, cenkalti.WithMaxTries(uint(p.MaxAttempts)))
	}
	_, err := cenkalti.Retry(ctx, func() (struct{}, error) {
		last = fn(ctx)
		if last != nil && final != nil && final(last) {
			return struct{}{}, cenkalti.Permanent(last)
		}
		return struct{}{}, last
	}, opts...)
	if err != nil {
		// fn ran at least once and failed last: cenkalti's error is fn's,
		// ctx's cause, or (for a final error on the last allowed call)
		// fn's still wrapped as permanent. The caller gets fn's as is.
		return last
	}
	return nil
}

// Sleep waits d or until ctx ends, and reports whether the whole wait
// passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
