package agentproc

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// WaitUntil polls f every gap until it is true, failing the test once
// timeout has passed, naming what it waited for.
func WaitUntil(t testing.TB, timeout, gap time.Duration, what string, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(timeout), wait.Gap(gap)),
		must.Sprintf("timed out after %s waiting for %s", timeout, what))
}
