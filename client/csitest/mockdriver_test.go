package csitest

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestStartMockDriver_Lifecycle(t *testing.T) {
	p := StartMockDriver(t, MockOptions{Name: "life.test"})
	pid := p.PID()
	must.Positive(t, pid)
	must.True(t, isSocket(p.Socket))
	must.Eq(t, "", p.ControllerSocket)

	p.Pause()
	p.Resume()

	p.Kill()
	must.Eq(t, 0, p.PID())
	must.False(t, alive(pid))
	must.True(t, isSocket(p.Socket)) // a crash leaves the socket behind

	p.Restart()
	must.Positive(t, p.PID())
	must.NotEq(t, pid, p.PID())
	c, err := net.Dial("unix", p.Socket)
	must.NoError(t, err)
	c.Close()

	pid = p.PID()
	p.Stop()
	must.False(t, alive(pid))
	must.False(t, isSocket(p.Socket)) // SIGTERM removes it
	p.Stop()                          // no-op when not running
}

func TestStartMockDriver_StopWhilePaused(t *testing.T) {
	p := StartMockDriver(t, MockOptions{ControllerSocket: true})
	must.True(t, isSocket(p.ControllerSocket))
	p.Pause()
	start := time.Now()
	p.Stop()
	must.Less(t, stopTimeout, time.Since(start))
	must.False(t, isSocket(p.Socket))
	must.False(t, isSocket(p.ControllerSocket))
}

func TestMockDriverPath_Executable(t *testing.T) {
	must.True(t, isExecutable(MockDriverPath(t)))
	root, err := repoRoot()
	must.NoError(t, err)
	must.FileExists(t, root+"/go.mod")
}

func TestSocketDir_Short(t *testing.T) {
	must.LessEq(t, maxSocketDir, len(SocketDir(t)))
}
