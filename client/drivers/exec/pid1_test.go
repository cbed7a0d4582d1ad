package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// helperArg makes the test binary a helper a task runs (TestMain):
// "setsid CMD ARGS..." leaves the process group and session, as
// util-linux's setsid does, and executes CMD; "signal0 PID" prints what
// kill(PID, 0) returns.
const helperArg = "-berth-exec-test-helper"

func runHelper(args []string) int {
	switch {
	case len(args) > 1 && args[0] == "setsid":
		if _, err := syscall.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, "setsid:", err)
			return 1
		}
		err := syscall.Exec(args[1], args[1:], os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		return 1
	case len(args) == 2 && args[0] == "signal0":
		pid, err := strconv.Atoi(args[1])
		if err != nil {
			return 2
		}
		if err := syscall.Kill(pid, 0); err != nil {
			fmt.Println(err)
		} else {
			fmt.Println("ok")
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper:", args)
	return 2
}

// helperTask is a root task config that runs the test binary as a helper
// with args (root: the binary is in the go tool's private build dir).
func helperTask(t *testing.T, args ...string) *TaskConfig {
	t.Helper()
	self, err := os.Executable()
	must.NoError(t, err)
	cfg := rootTaskConfig(t, "")
	cfg.Command, cfg.Args = self, append([]string{helperArg}, args...)
	return cfg
}

// readPID reads a PID a task wrote to a file, once it is there.
func readPID(t *testing.T, path string) int {
	t.Helper()
	waitLog(t, path, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, path)))
	must.NoError(t, err)
	return pid
}

// nsPids is the NSpid line of /proc/PID/status: the process's PID in each
// PID namespace from this process's to its own.
func nsPids(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			var ids []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return nil
				}
				ids = append(ids, n)
			}
			return ids
		}
	}
	return nil
}

// hostPID finds the process a task sees as nsPid: the one in the PID
// namespace of the task's init (as root; without root, the host's) with
// that PID there.
func hostPID(t *testing.T, h *Handle, nsPid int) int {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h.Pid()))
	must.NoError(t, err)
	procs, err := filepath.Glob("/proc/[0-9]*")
	must.NoError(t, err)
	for _, p := range procs {
		if l, err := os.Readlink(p + "/ns/pid"); err != nil || l != ns {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		if ids := nsPids(pid); len(ids) > 0 && ids[len(ids)-1] == nsPid {
			return ids[0]
		}
	}
	t.Fatalf("no process is PID %d in the namespace of task %d", nsPid, h.Pid())
	return 0
}

// TestStart_PIDNamespace_SeesItsOwn: the task's command is in its own PID
// namespace, whose PID 1 is its init, the process the handle tracks; its
// /proc lists those two and nothing of the host. (The command's PID is
// low but not 2: the init's threads take PIDs of the namespace too.)
func TestStart_PIDNamespace_SeesItsOwn(t *testing.T) {
	needRoot(t)
	// echo and the glob are dash's own: no process is forked before they run.
	cfg := taskConfig(t, `echo $$; echo /proc/[0-9]*; tr '\0' ' ' < /proc/1/cmdline; echo; echo ready; sleep 1000`)
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")
	lines := strings.Split(readFile(t, cfg.StdoutPath), "\n")
	must.SliceLen(t, 5, lines)
	must.Eq(t, []string{"/proc/1 /proc/" + lines[0], initArg0 + " ", "ready", ""}, lines[1:])
	must.Eq(t, []int{h.Pid(), 1}, nsPids(h.Pid()), must.Sprint("the handle tracks the namespace's PID 1"))
	cmdPid, err := strconv.Atoi(lines[0])
	must.NoError(t, err)
	must.Eq(t, []int{hostPID(t, h, cmdPid), cmdPid}, nsPids(hostPID(t, h, cmdPid)))
	must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 10*time.Second))
	must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGTERM)}, h.Result())
}

// TestStart_PIDNamespace_CannotSignalOutside: a task, even root (to whom
// no permission check would say no), cannot reach the test's process: its
// PID names nothing in the task's namespace.
func TestStart_PIDNamespace_CannotSignalOutside(t *testing.T) {
	needRoot(t)
	cfg := helperTask(t, "signal0", strconv.Itoa(os.Getpid()))
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)), must.Sprintf("stderr: %s", readFile(t, cfg.StderrPath)))
	must.Eq(t, syscall.ESRCH.Error()+"\n", readFile(t, cfg.StdoutPath))
}

// TestStart_PIDNamespace_ReapsOrphans: a process the task orphans is
// reparented to the init, which reaps it once it exits: no zombie stays.
func TestStart_PIDNamespace_ReapsOrphans(t *testing.T) {
	needRoot(t)
	cfg := taskConfig(t, `(sh -c 'while [ ! -e go ]; do sleep 0.02; done' & echo $! > orphan.pid)
orphan=$(cat orphan.pid)
grep PPid /proc/$orphan/status
touch go
while [ -e /proc/$orphan ]; do sleep 0.02; done
echo reaped`)
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)), must.Sprintf("stderr: %s", readFile(t, cfg.StderrPath)))
	must.Eq(t, "PPid:\t1\nreaped\n", readFile(t, cfg.StdoutPath))
}

// gone reports whether the process that was pid, started at start, has
// left the process table (not merely died: a zombie is still there).
func gone(pid int, start uint64) bool {
	st, _, err := procStat(pid)
	return errors.Is(err, os.ErrNotExist) || (err == nil && st != start)
}

// TestStop_PIDNamespace_KillsEscapedProcesses: a process the task started
// in a session of its own (out of reach of the signals to the task's group)
// and that ignores SIGTERM is gone once Stop returns: the command died of
// the SIGTERM, its init then exited, and the kernel killed the rest of the
// namespace.
func TestStop_PIDNamespace_KillsEscapedProcesses(t *testing.T) {
	needRoot(t)
	self, err := os.Executable()
	must.NoError(t, err)
	cfg := rootTaskConfig(t, `echo $$ > command.pid
`+self+` `+helperArg+` setsid /bin/sh -c 'trap "" TERM; echo $$ > escaped.pid; exec sleep 1000' &
while :; do sleep 0.05; done`)
	h := start(t, cfg)
	command := hostPID(t, h, readPID(t, filepath.Join(cfg.TaskDir, "command.pid")))
	escaped := hostPID(t, h, readPID(t, filepath.Join(cfg.TaskDir, "escaped.pid")))
	started, err := processStartTime(escaped)
	must.NoError(t, err)
	must.Eq(t, escaped, sessionOf(t, escaped), must.Sprint("it leads a session of its own"))
	must.NotEq(t, sessionOf(t, command), escaped, must.Sprint("not the command's"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must.NoError(t, h.Stop(ctx, syscall.SIGTERM, time.Hour), must.Sprint("SIGTERM is enough: no kill after the timeout"))
	must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGTERM)}, h.Result())
	must.True(t, gone(escaped, started), must.Sprintf("process %d outlived the task", escaped))
}

// sessionOf is a process's session ID (/proc/PID/stat field 6).
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must.NoError(t, err)
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	must.Greater(t, 3, len(fields))
	sid, err := strconv.Atoi(fields[3])
	must.NoError(t, err)
	return sid
}

// TestStop_CommandWithoutTrap: the command is not its namespace's PID 1, so
// a signal it has no handler for kills it (the kernel would drop it for a
// PID 1): Stop ends it with SIGTERM, long before the kill timeout.
func TestStop_CommandWithoutTrap(t *testing.T) {
	cfg := taskConfig(t, `echo ready; exec sleep 1000`)
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must.NoError(t, h.Stop(ctx, syscall.SIGTERM, time.Hour))
	must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGTERM)}, h.Result())
}

// TestStop_ForwardsTheSignal: the stop signal, whichever it is, reaches
// the command's handler.
func TestStop_ForwardsTheSignal(t *testing.T) {
	for _, tc := range []struct {
		name string // as trap spells it
		sig  syscall.Signal
	}{{"TERM", syscall.SIGTERM}, {"INT", syscall.SIGINT}, {"HUP", syscall.SIGHUP}, {"USR2", syscall.SIGUSR2}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, `trap 'echo got `+tc.name+`; exit 5' `+tc.name+`; echo ready; while :; do sleep 0.05; done`)
			h := start(t, cfg)
			waitLog(t, cfg.StdoutPath, "ready")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			must.NoError(t, h.Stop(ctx, tc.sig, time.Hour))
			must.Eq(t, ExitResult{ExitCode: 5}, h.Result())
			must.StrContains(t, readFile(t, cfg.StdoutPath), "got "+tc.name)
		})
	}
}

// TestStart_ExitResult: how the command ended, through its init: its exit
// code, or the signal that killed it (sent by itself, inside the
// namespace).
func TestStart_ExitResult(t *testing.T) {
	cases := []struct {
		script string
		want   ExitResult
		text   string
	}{
		{"exit 7", ExitResult{ExitCode: 7}, "exit code 7"},
		{"exit 0", ExitResult{}, "exit code 0"},
		{"kill -USR1 $$", ExitResult{ExitCode: -1, Signal: int(syscall.SIGUSR1)}, "killed by signal user defined signal 1"},
		{"kill -KILL $$", ExitResult{ExitCode: -1, Signal: int(syscall.SIGKILL)}, "killed by signal killed"},
		{"exit 143", ExitResult{ExitCode: 143}, "exit code 143"}, // not SIGTERM, though the init's own exit code would say so
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			res := waitDone(t, start(t, taskConfig(t, tc.script)))
			must.Eq(t, tc.want, res)
			must.Eq(t, tc.text, res.String())
		})
	}
}

// TestReattach_StopsThroughTheInit: a client that reattached stops the
// task by its init as the first client did, and the kernel takes down the
// rest of the namespace.
func TestReattach_StopsThroughTheInit(t *testing.T) {
	needRoot(t)
	cfg := taskConfig(t, `trap '' TERM; sleep 1000 & echo $! > child.pid; echo ready; wait`)
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")
	child := hostPID(t, h, readPID(t, filepath.Join(cfg.TaskDir, "child.pid")))
	started, err := processStartTime(child)
	must.NoError(t, err)

	r, err := Reattach(h.State())
	must.NoError(t, err)
	must.NoError(t, r.Stop(context.Background(), syscall.SIGTERM, 100*time.Millisecond))
	must.ErrorContains(t, r.Result().Err, "its status is unknown")
	must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGKILL)}, waitDone(t, h), must.Sprint("the first client's view"))
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return gone(child, started) }),
		wait.Timeout(5*time.Second)), must.Sprint("the command's child dies with the namespace"))
}
