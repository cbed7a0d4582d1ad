package agentproc

import (
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// FreePortsOn returns n TCP ports free on addr (all held open together
// while they are picked, so they differ).
func FreePortsOn(t testing.TB, addr string, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			t.Fatalf("agentproc: listen on %s: %v", addr, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// WaitUntil polls f every gap until it is true, failing the test once
// timeout has passed, naming what it waited for.
func WaitUntil(t testing.TB, timeout, gap time.Duration, what string, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(timeout), wait.Gap(gap)),
		must.Sprintf("timed out after %s waiting for %s", timeout, what))
}
