package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Log kinds, as ClientAllocLogsRequest.Kind.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
)

// sharedDirName is the alloc dir's directory shared by every task; no task
// may have its name.
const sharedDirName = "alloc"

// AllocDir is the allocation's directory under the client's data dir.
func AllocDir(dataDir, allocID string) string {
	return filepath.Join(dataDir, "alloc", allocID)
}

// SharedDir is the directory every task of the allocation shares
// (BERTH_ALLOC_DIR), holding logs/, data/ and tmp/.
func SharedDir(allocDir string) string { return filepath.Join(allocDir, sharedDirName) }

// TaskDir is a task's own directory (BERTH_TASK_DIR, its working
// directory), holding local/.
func TaskDir(allocDir, task string) string { return filepath.Join(allocDir, task) }

// LogPath is a task's stdout or stderr log.
func LogPath(allocDir, task, kind string) string {
	return filepath.Join(SharedDir(allocDir), "logs", task+"."+kind+".0")
}

// stateFile keeps the alloc's task handles across client restarts.
func stateFile(dataDir, allocID string) string {
	return filepath.Join(stateDir(dataDir), allocID+".json")
}

// stateDir holds the allocs' state files.
func stateDir(dataDir string) string { return filepath.Join(dataDir, "client", "allocs") }

// CheckName refuses an alloc ID or task name that is not one path
// component, or that is the shared dir's name.
func CheckName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%s %q is not usable as a directory name", kind, name)
	}
	if kind == "task name" && name == sharedDirName {
		return fmt.Errorf("task name %q is reserved for the alloc's shared dir", name)
	}
	return nil
}

// buildAllocDir makes the alloc dir for these tasks.
func buildAllocDir(allocDir string, tasks []string) error {
	dirs := []string{
		filepath.Join(SharedDir(allocDir), "logs"),
		filepath.Join(SharedDir(allocDir), "data"),
		filepath.Join(SharedDir(allocDir), "tmp"),
	}
	for _, t := range tasks {
		dirs = append(dirs, filepath.Join(TaskDir(allocDir, t), "local"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("build alloc dir: %w", err)
		}
	}
	return nil
}

// HasLocalState reports whether this node keeps anything of the alloc: its
// task handles or its alloc dir. A client that comes back uses it to find
// the allocations it must still kill and unmount.
func HasLocalState(dataDir, allocID string) bool {
	for _, p := range []string{stateFile(dataDir, allocID), AllocDir(dataDir, allocID)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// AnyLocalState reports whether this node keeps anything of any alloc: a
// client that starts with some reports itself initializing until it has
// learnt from the servers what to keep and cleaned up the rest.
func AnyLocalState(dataDir string) bool {
	for _, dir := range []string{filepath.Join(dataDir, "alloc"), stateDir(dataDir)} {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return true
		}
	}
	return false
}
