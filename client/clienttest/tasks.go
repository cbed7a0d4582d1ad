package clienttest

import (
	"os"
	"path/filepath"
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
// namespaces, and removes their cgroups.
func KillTasksUnder(dir string) {
	for _, pid := range TasksUnder(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(100 * time.Millisecond)
	// Their cgroups, which no client is left to remove (those of the
	// allocs under dir only: other tests' stay).
	mine := map[string]bool{}
	if entries, err := os.ReadDir(filepath.Join(dir, "alloc")); err == nil {
		for _, e := range entries {
			mine[e.Name()] = true
		}
	}
	exec.SweepCgroups(func(allocID string) bool { return !mine[allocID] }, 0)
}
