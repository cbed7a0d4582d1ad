package exec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesUnder lists the host PIDs of the processes whose working
// directory is dir or under it: the processes of the tasks started there
// (a task, and as root its PID namespace's init, run in the task dir).
// Inside a task's PID namespace the task sees other numbers: these are the
// host's.
func ProcessesUnder(dir string) []int {
	dir = filepath.Clean(dir)
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
