package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
)

// TestRetryLeaderToken: a new leader tries to write its token as the
// policy allows, logging each failure with its attempt, and stops at the
// first success, after the last attempt, or when its leadership ends.
func TestRetryLeaderToken(t *testing.T) {
	fast := backoff.Policy{Initial: time.Millisecond, Max: time.Millisecond, MaxAttempts: 3}
	errRaft := errors.New("raft: not leader")
	cases := []struct {
		name         string
		results      []error // what write returns on each call; the last repeats
		wantCalls    int
		wantFailures int
	}{
		{"first try", []error{nil}, 1, 0},
		{"after two failures", []error{errRaft, errRaft, nil}, 3, 2},
		{"gives up after three", []error{errRaft}, 3, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testlog.Recorder{}
			calls := 0
			retryLeaderToken(context.Background(), fast, logs.Logger("server"), func() error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			})
			must.EqOp(t, tc.wantCalls, calls)
			must.EqOp(t, tc.wantFailures, strings.Count(logs.String(), "cannot write the leader token"), must.Sprint(logs.String()))
			for n := 1; n <= tc.wantFailures; n++ {
				must.StrContains(t, logs.String(), fmt.Sprintf("attempt=%d error=%q", n, errRaft.Error()))
			}
		})
	}

	t.Run("leadership ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		slow := backoff.Policy{Initial: time.Hour, Max: time.Hour, MaxAttempts: 3}
		retryLeaderToken(ctx, slow, (&testlog.Recorder{}).Logger("server"), func() error {
			calls++
			cancel() // the wait after this failure is cut short
			return errRaft
		})
		must.EqOp(t, 1, calls)
	})
}
