package clienttest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TasksUnder lists the PIDs of the processes whose working directory is
// under dir: the tasks a client agent started there (exec tasks run in
// their task dir).
func TasksUnder(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillTasksUnder kills, by PID, every task a client agent left under dir
// (TasksUnder), then waits a moment for the kernel to drop their mount
// namespaces.
func KillTasksUnder(dir string) {
	for _, pid := range TasksUnder(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(100 * time.Millisecond)
}
