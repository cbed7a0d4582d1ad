package clienttest

import (
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/drivers/exec"
)

// TasksUnder lists the host PIDs of the processes whose working directory
// is under dir: the tasks a client agent started there
// (exec.ProcessesUnder).
func TasksUnder(dir string) []int { return exec.ProcessesUnder(dir) }

// KillTasksUnder kills, by PID, every task a client agent left under dir
// (TasksUnder), then waits a moment for the kernel to drop their mount
// namespaces.
func KillTasksUnder(dir string) {
	for _, pid := range TasksUnder(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(100 * time.Millisecond)
}
