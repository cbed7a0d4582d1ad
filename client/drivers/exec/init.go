package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initArg0 is the argv[0] a re-exec of the binary carries to become a
// task's init.
const initArg0 = "berth-exec-init"

// File descriptors of the init: the spec to read, the status pipe
// (close-on-exec: EOF means the command was executed), and the result
// pipe (how the task ended, when the init is its PID 1; see runPID1).
const (
	specFD   = 3
	statusFD = 4
	resultFD = 5
)

// initSpec is what the init needs: the command, its environment and
// directory, whether it runs in new mount and PID namespaces (as root),
// the mounts to make there (destinations already resolved to absolute
// paths), and the user to become once they are made (nil: stay who berth
// is).
type initSpec struct {
	Command    string
	Args       []string
	Env        []string
	Dir        string
	Namespaces bool
	Mounts     []Mount
	Cred       *Credential
}

// Init becomes the task's init when this process was started as one: it
// sets up the namespaces and, in new ones, stays as their PID 1 with the
// task's command as its child (else executes the command itself); it
// never returns. In any other process it returns at once. Call it first
// in main() and in TestMain.
func Init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	err := runInit()
	status := os.NewFile(statusFD, "status")
	if status != nil {
		fmt.Fprint(status, err.Error())
	}
	os.Exit(127)
}

// runInit returns only on failure.
func runInit() error {
	// no_new_privs (becomeUser) is a thread's: the thread that sets it must
	// be the one that forks or executes the command.
	runtime.LockOSThread()
	syscall.CloseOnExec(statusFD)
	syscall.CloseOnExec(resultFD)
	f := os.NewFile(specFD, "spec")
	if f == nil {
		return errors.New("no spec pipe")
	}
	var s initSpec
	err := json.NewDecoder(f).Decode(&s)
	f.Close()
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	if s.Namespaces {
		if err := setupMounts(s.Mounts, s.Dir); err != nil {
			return err
		}
	}
	// The task dir is entered first: the task finds it as its working
	// directory even where a dir above it is not searchable by its user.
	if err := os.Chdir(s.Dir); err != nil {
		return fmt.Errorf("enter task dir: %w", err)
	}
	if s.Cred != nil {
		if err := becomeUser(s.Cred); err != nil {
			return err
		}
	}
	path, err := lookPath(s.Command, s.Env)
	if err != nil {
		return err
	}
	argv := append([]string{s.Command}, s.Args...)
	if s.Namespaces {
		return runPID1(path, argv, s.Env)
	}
	if err := syscall.Exec(path, argv, s.Env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// becomeUser drops to the task's user for good: its supplementary groups,
// then its gid, then its uid (after which nothing else could be changed).
// Go applies each to every thread of the process. It is done here, not
// with SysProcAttr.Credential on the init's start, which would drop root
// before the init makes the task's mounts; and by the init itself, not
// only for the command it starts: the task's PID 1 holds no more than the
// task does (as Docker's --init runs as the container's user).
func becomeUser(c *Credential) error {
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("set the groups of user %q: %w", c.User, err)
	}
	if err := syscall.Setgid(int(c.GID)); err != nil {
		return fmt.Errorf("set gid %d of user %q: %w", c.GID, c.User, err)
	}
	if err := syscall.Setuid(int(c.UID)); err != nil {
		return fmt.Errorf("set uid %d of user %q: %w", c.UID, c.User, err)
	}
	if c.UID != 0 {
		// A task that is not root stays so: a setuid or file-capability
		// binary it runs (sudo, su, ping) gains nothing (Nomad's exec
		// driver does the same).
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("set no_new_privs for user %q: %w", c.User, err)
		}
	}
	return nil
}

// lookPath finds the command as execvp would, in the task's PATH (not the
// agent's).
func lookPath(cmd string, env []string) (string, error) {
	if strings.Contains(cmd, "/") {
		if err := executable(cmd); err != nil {
			return "", fmt.Errorf("command %s: %w", cmd, err)
		}
		return cmd, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, cmd)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %q", cmd, path)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
