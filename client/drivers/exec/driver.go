package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/structs"
)

// Errors, for errors.Is.
var (
	// ErrNeedsRoot: what the task asks for needs berth to run as root: a
	// mount namespace (volume mounts), or another user.
	ErrNeedsRoot = errors.New("exec: berth is not running as root")
	// ErrRootNotAllowed: the task would run as root, and the caller did
	// not allow it (the client's allow_root_tasks).
	ErrRootNotAllowed = errors.New("exec: tasks may not run as root on this client")
	// ErrUserNotAllowed: the client's user policy refuses the task's
	// user (a *UserNotAllowedError says why).
	ErrUserNotAllowed = errors.New("exec: user not allowed on this client")
	// ErrUnknownUser: the task's user does not exist on this host.
	ErrUnknownUser = errors.New("exec: no such user")
	// ErrInvalidTask: the task config is wrong (the message says how).
	ErrInvalidTask = errors.New("exec: invalid task")
	// ErrGone: a task to reattach to is no longer running.
	ErrGone = errors.New("exec: the task's process is gone")
)

// DefaultPath is the PATH a task gets when its env has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// TaskConfig is one start of a task.
type TaskConfig struct {
	AllocID  string
	TaskName string
	// TaskDir is the task's working directory, BERTH_TASK_DIR, and where
	// relative mount destinations land. AllocDir is the alloc's shared
	// directory, BERTH_ALLOC_DIR. Both exist and are absolute.
	TaskDir  string
	AllocDir string
	// StdoutPath and StderrPath are appended to (a restart continues the
	// same log). Both are under LogRoot (the alloc dir), and are opened
	// beneath it: a link anywhere below LogRoot is refused, never
	// followed. An empty LogRoot is each log's own directory.
	StdoutPath string
	StderrPath string
	LogRoot    string

	Command string
	Args    []string
	Env     map[string]string
	// Extra are more BERTH_ variables, set by the caller.
	Extra  map[string]string
	Mounts []Mount

	// User is who the task runs as: a user name or a numeric uid; ""
	// is DefaultUser (see ResolveUser). AllowRoot lets it be root; Users,
	// when set, is the client's policy for other users (CheckPolicy).
	User      string
	AllowRoot bool
	Users     *structs.TaskUserPolicy
	// Limits, when set, are enforced in a cgroup of the task's own (as
	// root; without root they cannot be, and the start says so).
	Limits *Limits
}

// resolve checks the config and returns it with every mount destination
// absolute and clean.
func (c *TaskConfig) resolve() (*TaskConfig, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: task %q: %s", ErrInvalidTask, c.TaskName, fmt.Sprintf(format, args...))
	}
	if c.Command == "" {
		return nil, bad("config has no command")
	}
	for name, p := range map[string]string{"task dir": c.TaskDir, "alloc dir": c.AllocDir,
		"stdout log": c.StdoutPath, "stderr log": c.StderrPath} {
		if !filepath.IsAbs(p) {
			return nil, bad("%s %q is not an absolute path", name, p)
		}
	}
	r := *c
	env := c.envMap()
	r.Command = structs.InterpolateEnv(c.Command, env)
	r.Args = structs.InterpolateEnvAll(c.Args, env)
	r.Mounts = make([]Mount, len(c.Mounts))
	for i, m := range c.Mounts {
		if !filepath.IsAbs(m.Source) {
			return nil, bad("volume source %q is not an absolute path", m.Source)
		}
		m.Source = filepath.Clean(m.Source)
		if m.Destination == "" {
			return nil, bad("mount of %s has no destination", m.Source)
		}
		if filepath.IsAbs(m.Destination) {
			m.Destination = filepath.Clean(m.Destination)
		} else {
			d := filepath.Join(c.TaskDir, m.Destination)
			if !under(d, filepath.Clean(c.TaskDir)) {
				return nil, bad("destination %q leaves the task dir", m.Destination)
			}
			m.Destination = d
		}
		if m.Destination == "/" {
			return nil, bad("destination / would hide the host's root")
		}
		if _, err := propagationFlag(m.Propagation); err != nil {
			return nil, bad("mount at %s: %v", m.Destination, err)
		}
		if m.Propagation == structs.PropagationBidirectional {
			if m.ReadOnly {
				return nil, bad("mount at %s: bidirectional propagation needs a read-write mount", m.Destination)
			}
			if under(m.Destination, m.Source) {
				return nil, bad("mount at %s: a bidirectional destination must not be inside its source %s", m.Destination, m.Source)
			}
			if under("/proc", m.Source) {
				// It would stay shared: the task's /proc would reach the host.
				return nil, bad("mount at %s: a bidirectional source must not hold /proc", m.Destination)
			}
		}
		r.Mounts[i] = m
	}
	return &r, nil
}

// envMap is the task's environment: its own env, a default PATH, and the
// BERTH_ variables (which the task's env cannot override). Extra holds
// BERTH_ variables the caller sets (node ID and name, job ID).
func (c *TaskConfig) envMap() map[string]string {
	m := make(map[string]string, len(c.Env)+len(c.Extra)+5)
	for k, v := range c.Env {
		m[k] = v
	}
	if _, ok := m["PATH"]; !ok {
		m["PATH"] = DefaultPath
	}
	for k, v := range c.Extra {
		m[k] = v
	}
	m["BERTH_ALLOC_ID"] = c.AllocID
	m["BERTH_TASK_NAME"] = c.TaskName
	m["BERTH_TASK_DIR"] = c.TaskDir
	m["BERTH_ALLOC_DIR"] = c.AllocDir
	return m
}

// env is envMap as a sorted list of NAME=value.
func (c *TaskConfig) env() []string {
	m := c.envMap()
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Start starts the task and returns once its command runs, or with the
// reason it could not: a bad config, a mount that failed, a command not
// found.
func Start(ctx context.Context, cfg *TaskConfig) (*Handle, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	root := os.Geteuid() == 0
	if !root && len(c.Mounts) > 0 {
		return nil, fmt.Errorf("task %q: volume mounts need a mount namespace: %w", c.TaskName, ErrNeedsRoot)
	}
	cred, err := ResolveUser(c.User, c.AllowRoot)
	if err == nil {
		err = CheckPolicy(cred, c.Users)
	}
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", c.TaskName, err)
	}
	// What is already under each bidirectional source stays when the
	// task is gone; what appears while it runs came from the task.
	var cleanups []MountCleanup
	for _, m := range c.Mounts {
		if m.Propagation == structs.PropagationBidirectional && m.DetachOnExit {
			before, err := MountsUnder(m.Source)
			if err != nil {
				return nil, fmt.Errorf("task %q: list mounts under %s: %w", c.TaskName, m.Source, err)
			}
			cleanups = append(cleanups, MountCleanup{Source: m.Source, Before: before})
		}
	}

	stdout, err := beneath.OpenAppend(c.LogRoot, c.StdoutPath)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", c.TaskName, err)
	}
	defer stdout.Close()
	stderr, err := beneath.OpenAppend(c.LogRoot, c.StderrPath)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", c.TaskName, err)
	}
	defer stderr.Close()

	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return nil, err
	}
	defer statusR.Close()
	resultR, resultW, err := os.Pipe()
	if err != nil {
		specR.Close()
		statusW.Close()
		return nil, err
	}

	var cg taskCgroup
	var group string
	if c.Limits != nil {
		if !root {
			return nil, fmt.Errorf("task %q: its resources cannot be limited without root (cgroups): %w", c.TaskName, ErrNeedsRoot)
		}
		group = path.Join(CgroupParent, cgroupName(c.AllocID, c.TaskName, time.Now()))
		if cg, err = newTaskCgroup(group, c.Limits); err != nil {
			return nil, fmt.Errorf("task %q: limit its resources: %w", c.TaskName, err)
		}
	}
	oomBefore := uint64(0)
	if cg != nil {
		oomBefore, _ = cg.oomKills()
	}
	dropCgroup := func() {
		if cg != nil {
			_ = removeWhenEmpty(cg)
		}
	}

	attr := &syscall.SysProcAttr{Setpgid: true}
	if root {
		attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	}
	cmd := &osexec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{initArg0},
		Env:         []string{},
		Dir:         "/",
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  []*os.File{specR, statusW, resultW}, // specFD, statusFD, resultFD
		SysProcAttr: attr,
	}
	err = cmd.Start()
	specR.Close()
	statusW.Close()
	resultW.Close()
	if err != nil {
		resultR.Close()
		dropCgroup()
		return nil, fmt.Errorf("task %q: start: %w", c.TaskName, err)
	}
	fail := func(err error) (*Handle, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		resultR.Close()
		dropCgroup()
		return nil, err
	}
	// The init waits for its spec: in its cgroup before the command
	// starts, every process of the task is.
	if cg != nil {
		if err := cg.add(cmd.Process.Pid); err != nil {
			return fail(fmt.Errorf("task %q: put its init in its cgroup: %w", c.TaskName, err))
		}
	}

	spec := initSpec{Command: c.Command, Args: c.Args, Env: c.env(), Dir: c.TaskDir, Namespaces: root, Mounts: c.Mounts, Cred: cred}
	if err := json.NewEncoder(specW).Encode(spec); err != nil {
		return fail(fmt.Errorf("task %q: send spec: %w", c.TaskName, err))
	}
	specW.Close()

	msg, err := readStatus(ctx, statusR)
	if err != nil || msg != "" {
		if err == nil {
			err = fmt.Errorf("task %q: %s", c.TaskName, msg)
		}
		return fail(err)
	}
	start, _ := processStartTime(cmd.Process.Pid)
	h := newHandle(c.TaskName, cmd.Process.Pid, start, cleanups)
	if cg != nil {
		h.cg = cg
		h.state.Cgroup, h.state.OOMKillsBefore = group, oomBefore
	}
	go h.wait(cmd, resultR)
	return h, nil
}

// readStatus reads the init's status pipe to its end: empty once the
// command was executed, else the init's error.
func readStatus(ctx context.Context, r *os.File) (string, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			return "", fmt.Errorf("read the init's status: %w", res.err)
		}
		return strings.TrimSpace(string(res.b)), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
