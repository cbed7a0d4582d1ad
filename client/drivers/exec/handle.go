package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ExitResult is how a task's process ended.
type ExitResult struct {
	ExitCode int
	Signal   int // the signal that killed it, 0 if it exited
	// OOMKilled: the kernel killed a process of the task for going over
	// its memory limit (its cgroup counted an OOM kill while it ran).
	OOMKilled bool
	// Err is set when the exit is unknown (a reattached task, whose
	// status only its parent could read).
	Err error
}

// Successful reports a clean exit: code 0, no signal.
func (r ExitResult) Successful() bool { return r.Err == nil && r.ExitCode == 0 && r.Signal == 0 }

func (r ExitResult) String() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.Signal != 0:
		return fmt.Sprintf("killed by signal %s", syscall.Signal(r.Signal))
	}
	return fmt.Sprintf("exit code %d", r.ExitCode)
}

// MountCleanup is a bidirectional source to clean when the task is gone,
// and the mounts under it that were there before the task.
type MountCleanup struct {
	Source string
	Before []string
}

// HandleState is what a client keeps of a running task to find it again
// after a restart.
type HandleState struct {
	TaskName string
	// Pid is the host PID of the task's init (PID 1 of its namespace, when
	// berth runs as root) or of the command (when not); see Handle.Pid.
	Pid       int
	StartTime uint64 // the process's start time in clock ticks after boot: tells a reused PID apart
	Cleanups  []MountCleanup
	// Cgroup is the task's cgroup (CgroupParent/<alloc>.<task>.<stamp>), "" when
	// it has none; OOMKillsBefore what its OOM count was when the task
	// started in it.
	Cgroup         string `json:",omitempty"`
	OOMKillsBefore uint64 `json:",omitempty"`
}

// Handle is a running (or finished) task.
type Handle struct {
	state HandleState
	cg    taskCgroup // nil without one
	done  chan struct{}

	mu     sync.Mutex
	result ExitResult
	detErr error
}

func newHandle(task string, pid int, start uint64, cleanups []MountCleanup) *Handle {
	return &Handle{
		state: HandleState{TaskName: task, Pid: pid, StartTime: start, Cleanups: cleanups},
		done:  make(chan struct{}),
	}
}

// State is the handle's persistable form.
func (h *Handle) State() HandleState { return h.state }

// Pid is the host PID of the process berth started and signals, the
// leader of its process group: as root, the task's init, PID 1 of the
// task's PID namespace, which the command and everything it started die
// with; without root, the command itself.
func (h *Handle) Pid() int { return h.state.Pid }

// SetCpuset moves the task onto other cores; without a cgroup it has
// none to change.
func (h *Handle) SetCpuset(cpuset string) error {
	if h.cg == nil {
		return nil
	}
	if err := h.cg.setCpus(cpuset); err != nil {
		return fmt.Errorf("task %q: set its cores to %s: %w", h.state.TaskName, cpuset, err)
	}
	return nil
}

// Done is closed once the task's process is gone and cleaned up after.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Result is how the task ended; valid once Done is closed.
func (h *Handle) Result() ExitResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.result
}

// CleanupError is the error of detaching what the task left mounted under
// its bidirectional volumes, if any; valid once Done is closed.
func (h *Handle) CleanupError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.detErr
}

// wait reaps a process this client started: the task's init, whose
// result pipe says how the command ended when the init was its PID 1
// (else it is empty, and the init's status is the command's own).
func (h *Handle) wait(cmd *osexec.Cmd, result *os.File) {
	err := cmd.Wait()
	reported, ok := readResult(result)
	res := ExitResult{}
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case cmd.ProcessState == nil:
		res.Err = fmt.Errorf("task %q: wait: %w", h.state.TaskName, err)
		res.ExitCode = -1
	case ok:
		res.ExitCode, res.Signal = reported.ExitCode, reported.Signal
	case ws.Signaled():
		res.Signal = int(ws.Signal())
		res.ExitCode = -1
	default:
		res.ExitCode = ws.ExitStatus()
	}
	h.finish(res)
}

// readResult reads what the init reported, once it is gone: nothing when
// it exec'd the command itself, or was killed before the command ended.
func readResult(f *os.File) (initResult, bool) {
	defer f.Close()
	var r initResult
	err := json.NewDecoder(f).Decode(&r)
	return r, err == nil
}

// finish kills what is left of the task's process group (without root: as
// root the init's exit took its namespace down), detaches what the task
// mounted under its bidirectional volumes, and closes Done.
func (h *Handle) finish(res ExitResult) {
	_ = syscall.Kill(-h.state.Pid, syscall.SIGKILL)
	var errs []error
	if h.cg != nil {
		if kills, err := h.cg.oomKills(); err == nil && kills > h.state.OOMKillsBefore {
			res.OOMKilled = true
		}
		if err := removeWhenEmpty(h.cg); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", h.state.Cgroup, err))
		}
	}
	for _, c := range h.state.Cleanups {
		if _, err := DetachMountsUnder(c.Source, c.Before); err != nil {
			errs = append(errs, err)
		}
	}
	h.mu.Lock()
	h.result = res
	h.detErr = errors.Join(errs...)
	h.mu.Unlock()
	close(h.done)
}

// Stop sends sig to the task's process group, and SIGKILL after timeout
// if it is still running; it returns once the task is gone, or with ctx's
// error. As root the group is the init's, which passes sig on to the
// command's group; SIGKILL kills the init, and with it every process of
// the task's PID namespace.
func (h *Handle) Stop(ctx context.Context, sig syscall.Signal, timeout time.Duration) error {
	return h.StopSooner(ctx, sig, timeout, nil)
}

// StopSooner is Stop whose SIGKILL also comes as soon as killNow is closed
// (a fence's deadline, shorter than the task's kill timeout).
func (h *Handle) StopSooner(ctx context.Context, sig syscall.Signal, timeout time.Duration, killNow <-chan struct{}) error {
	select {
	case <-h.done:
		return nil
	default:
	}
	if err := syscall.Kill(-h.state.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("task %q: signal %s: %w", h.state.TaskName, sig, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-killNow:
	}
	if err := syscall.Kill(-h.state.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("task %q: kill: %w", h.state.TaskName, err)
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reattachPoll is how often a reattached task is checked.
var reattachPoll = 250 * time.Millisecond

// Reattach finds a task a previous client started (this client is not its
// parent, so its exit status is unknown: Result has Err set). It returns
// ErrGone when the process is no longer the one the state names.
func Reattach(s HandleState) (*Handle, error) {
	if s.Pid <= 0 {
		return nil, fmt.Errorf("task %q: %w (no PID)", s.TaskName, ErrGone)
	}
	if !alive(s.Pid, s.StartTime) {
		dropRecordedCgroup(s.Cgroup)
		return nil, fmt.Errorf("task %q (pid %d): %w", s.TaskName, s.Pid, ErrGone)
	}
	h := newHandle(s.TaskName, s.Pid, s.StartTime, s.Cleanups)
	h.state.Cgroup, h.state.OOMKillsBefore = s.Cgroup, s.OOMKillsBefore
	if s.Cgroup != "" {
		if cg, err := loadTaskCgroup(s.Cgroup); err == nil {
			h.cg = cg
		}
	}
	go func() {
		t := time.NewTicker(reattachPoll)
		defer t.Stop()
		for range t.C {
			if !alive(s.Pid, s.StartTime) {
				break
			}
		}
		h.finish(ExitResult{ExitCode: -1, Err: fmt.Errorf("task %q exited; its status is unknown (started by an earlier client)", s.TaskName)})
	}()
	return h, nil
}

// ProcessAlive reports whether the task the state names still runs.
func ProcessAlive(s HandleState) bool { return alive(s.Pid, s.StartTime) }

// alive reports whether pid runs and started at start (not a zombie).
func alive(pid int, start uint64) bool {
	st, state, err := procStat(pid)
	return err == nil && st == start && state != "Z" && state != "X"
}

func processStartTime(pid int) (uint64, error) {
	st, _, err := procStat(pid)
	return st, err
}

// procStat reads a process's start time and state from /proc/PID/stat.
func procStat(pid int) (uint64, string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64) // field 22
	return start, fields[0], err
}
