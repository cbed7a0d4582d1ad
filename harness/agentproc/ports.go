package agentproc

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/internal/testlog"
)

// FreePortsOn returns n distinct TCP ports free on addr, outside the
// kernel's ephemeral range (testlog.FreePorts).
func FreePortsOn(t testing.TB, addr string, n int) []int {
	t.Helper()
	return testlog.FreePorts(t, addr, n)
}

// WaitUntil polls f every gap until it is true, failing the test once
// timeout has passed, naming what it waited for.
func WaitUntil(t testing.TB, timeout, gap time.Duration, what string, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(timeout), wait.Gap(gap)),
		must.Sprintf("timed out after %s waiting for %s", timeout, what))
}
