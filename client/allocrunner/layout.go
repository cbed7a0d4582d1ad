package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-csi/berth/client/internal/beneath"
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
func LogPath(allocDir, task, kind string) string { return filepath.Join(allocDir, logRel(task, kind)) }

// logRel is a task's log under its alloc dir.
func logRel(task, kind string) string {
	return filepath.Join(sharedDirName, "logs", task+"."+kind+".0")
}

// OpenLog opens a task's stdout or stderr log for reading, beneath the
// alloc dir: a link anywhere under it is refused (beneath.ErrLink), never
// followed.
func OpenLog(allocDir, task, kind string) (*os.File, error) {
	root, err := beneath.Open(allocDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(logRel(task, kind), os.O_RDONLY, 0)
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

// buildAllocDir makes the alloc dir for these tasks, or checks what a
// client before this one made of it (a restart): every dir under it is
// made or found beneath it, and one that a task replaced with a link or a
// file is an error that names it (see allocDirError), never followed.
func buildAllocDir(allocDir string, tasks []string) error {
	if err := os.MkdirAll(allocDir, 0o755); err != nil {
		return fmt.Errorf("build alloc dir: %w", err)
	}
	root, err := beneath.Open(allocDir)
	if err != nil {
		return fmt.Errorf("build alloc dir: %w", err)
	}
	defer root.Close()
	dirs := []string{
		filepath.Join(sharedDirName, "logs"),
		filepath.Join(sharedDirName, "data"),
		filepath.Join(sharedDirName, "tmp"),
	}
	for _, t := range tasks {
		dirs = append(dirs, filepath.Join(t, "local"))
	}
	for _, d := range dirs {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return allocDirError(allocDir, err)
		}
	}
	return nil
}

// allocDirError says what berth found in place of one of its alloc dir's
// entries: a link or a file that a task left where berth keeps a
// directory is the task's doing, and the allocation cannot go on.
func allocDirError(allocDir string, err error) error {
	if errors.Is(err, beneath.ErrLink) || errors.Is(err, beneath.ErrNotDir) || errors.Is(err, beneath.ErrNotRegular) {
		return fmt.Errorf("%w; a task put it in place of berth's own entry, so the allocation stops", err)
	}
	return fmt.Errorf("alloc dir %s: %w", allocDir, err)
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
