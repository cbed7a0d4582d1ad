package backoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

var (
	errTransient = errors.New("transient")
	errFinal     = errors.New("final")
)

func isFinal(err error) bool { return errors.Is(err, errFinal) }

func fast() Policy {
	return Policy{Initial: time.Millisecond, Max: 4 * time.Millisecond, Multiplier: 2}
}

func TestRetry_Outcomes(t *testing.T) {
	cases := []struct {
		name      string
		policy    Policy
		final     func(error) bool
		results   []error // what fn returns on each call; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"success at once", fast(), isFinal, []error{nil}, 1, nil},
		{"retries until success", fast(), isFinal, []error{errTransient, errTransient, nil}, 3, nil},
		{"stops on a final error", fast(), isFinal, []error{errTransient, errFinal, nil}, 2, errFinal},
		{"no final test retries everything", fast(), nil, []error{errFinal, errFinal, nil}, 3, nil},
		{"stops after max attempts", func() Policy { p := fast(); p.MaxAttempts = 4; return p }(), isFinal,
			[]error{errTransient}, 4, errTransient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), tc.policy, tc.final, func(context.Context) error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			})
			must.Eq(t, tc.wantCalls, calls)
			if tc.wantErr == nil {
				must.NoError(t, err)
			} else {
				must.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
}

func TestRetry_ContextEndReturnsLastError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Retry(ctx, Policy{Initial: time.Hour, Max: time.Hour}, nil, func(context.Context) error {
		calls++
		cancel() // the wait after this failure is cut short
		return errTransient
	})
	must.Eq(t, 1, calls)
	must.ErrorIs(t, err, errTransient)
}

func TestRetry_ReturnsTheCallsErrorUnwrapped(t *testing.T) {
	// A final error on the last allowed call, and a context ended with a
	// cause of its own, still give back exactly what fn returned.
	p := fast()
	p.MaxAttempts = 2
	calls := 0
	err := Retry(context.Background(), p, isFinal, func(context.Context) error {
		calls++
		if calls == 2 {
			return errFinal
		}
		return errTransient
	})
	must.Eq(t, 2, calls)
	must.Eq(t, errFinal, err)

	ctx, cancel := context.WithCancelCause(context.Background())
	err = Retry(ctx, Policy{Initial: time.Hour, Max: time.Hour}, nil, func(context.Context) error {
		cancel(errors.New("shutting down"))
		return errTransient
	})
	must.Eq(t, errTransient, err)
}

func TestRetry_EndedContextNeverCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := Retry(ctx, fast(), nil, func(context.Context) error { called = true; return nil })
	must.False(t, called)
	must.ErrorIs(t, err, context.Canceled)
}

func TestDelay_GrowsAndIsBounded(t *testing.T) {
	p := Policy{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond, Multiplier: 2}
	want := []time.Duration{10, 20, 40, 80, 80, 80}
	for i, w := range want {
		must.Eq(t, w*time.Millisecond, p.Delay(i+1), must.Sprintf("attempt %d", i+1))
	}
	must.Eq(t, p.Max, p.Delay(1000)) // no overflow
	p.Jitter = 0.5
	for attempt := 1; attempt < 50; attempt++ {
		d := p.Delay(attempt)
		full := Policy{Initial: p.Initial, Max: p.Max, Multiplier: 2}.Delay(attempt)
		must.LessEq(t, full, d)
		must.GreaterEq(t, full/2, d)
	}
}

func TestDelay_Defaults(t *testing.T) {
	var p Policy
	must.Eq(t, 100*time.Millisecond, p.Delay(1))
	must.Eq(t, 200*time.Millisecond, p.Delay(2))
	must.Eq(t, 30*time.Second, p.Delay(100))
}

func TestSleep(t *testing.T) {
	must.True(t, Sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	must.False(t, Sleep(ctx, time.Hour))
}
