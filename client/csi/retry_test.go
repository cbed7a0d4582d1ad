package csi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func fastBackoff() Backoff {
	return Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Multiplier: 2}
}

func TestRetry_Outcomes(t *testing.T) {
	unavailable := wrapError("p", "Call", status.Error(codes.Unavailable, "down"))
	notFound := wrapError("p", "Call", status.Error(codes.NotFound, "gone"))

	cases := []struct {
		name      string
		policy    Backoff
		results   []error // what fn returns on each call; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"success at once", fastBackoff(), []error{nil}, 1, nil},
		{"retries until success", fastBackoff(), []error{unavailable, unavailable, nil}, 3, nil},
		{"stops on a final error", fastBackoff(), []error{unavailable, notFound, nil}, 2, notFound},
		{"stops after max attempts", func() Backoff { b := fastBackoff(); b.MaxAttempts = 4; return b }(),
			[]error{unavailable}, 4, unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), tc.policy, func(context.Context) error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			})
			must.Eq(t, tc.wantCalls, calls)
			if tc.wantErr == nil {
				must.NoError(t, err)
			} else {
				must.Eq(t, tc.wantErr, err)
			}
		})
	}
}

func TestRetry_ContextEnds(t *testing.T) {
	unavailable := wrapError("p", "Call", status.Error(codes.Unavailable, "down"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	err := Retry(ctx, Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}, func(context.Context) error {
		calls++
		return unavailable
	})
	must.Eq(t, unavailable, err) // the plugin's answer, not just "deadline exceeded"
	must.Greater(t, 1, calls)

	// A context that ended before the first call returns its error.
	err = Retry(ctx, fastBackoff(), func(context.Context) error { return nil })
	must.True(t, errors.Is(err, context.DeadlineExceeded))
}

func TestBackoff_Delay_Bounded(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		must.Eq(t, w*time.Millisecond, b.Delay(i+1))
	}
	must.Eq(t, time.Second, b.Delay(1000)) // no overflow

	b.Jitter = 0.5
	for attempt := 1; attempt < 20; attempt++ {
		d := b.Delay(attempt)
		full := Backoff{Initial: b.Initial, Max: b.Max, Multiplier: 2}.Delay(attempt)
		must.LessEq(t, full, d)
		must.GreaterEq(t, full/2, d)
	}

	var zero Backoff // defaults
	must.Eq(t, 100*time.Millisecond, zero.Delay(1))
	must.Eq(t, 30*time.Second, zero.Delay(100))
	must.Eq(t, DefaultBackoff().Initial, 100*time.Millisecond)
}
