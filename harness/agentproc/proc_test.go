package agentproc

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestProc_KillRestartStop: a killed process is reaped and can start
// again with its arguments, both starts logging to the one file; Stop
// ends a stopped (SIGSTOP) process too.
func TestProc_KillRestartStop(t *testing.T) {
	p := &Proc{Name: "sleeper", Bin: "/bin/sh", Args: []string{"-c", "echo up; exec sleep 60"},
		LogPath: filepath.Join(t.TempDir(), "sleeper.log")}
	t.Cleanup(func() { p.Stop(time.Second) })
	must.ErrorContains(t, p.Signal(syscall.SIGTERM), "sleeper is not running")

	must.NoError(t, p.Start())
	first := p.PID()
	must.Positive(t, first)
	must.ErrorContains(t, p.Start(), "already running")
	ups := func(n int) func() bool { return func() bool { return strings.Count(p.LogTail(10), "\nup") == n } }
	WaitUntil(t, 10*time.Second, 5*time.Millisecond, "the first start's output in the log", ups(1))
	must.NoError(t, p.Kill())
	must.False(t, p.Running())

	must.NoError(t, p.Start())
	must.NotEqOp(t, first, p.PID())
	WaitUntil(t, 10*time.Second, 5*time.Millisecond, "the second start's output in the log", ups(2))
	must.NoError(t, p.Signal(syscall.SIGSTOP))
	p.Stop(5 * time.Second)
	must.False(t, p.Running(), must.Sprint("a stopped process is continued, then terminated"))

	log := p.LogTail(10)
	must.EqOp(t, 2, strings.Count(log, ": sleeper starting /bin/sh"), must.Sprint(log))
}
