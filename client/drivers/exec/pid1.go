package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// initResult is how the task's command ended, as its PID 1 saw it: what
// the init writes to the result pipe before it exits. The init's own exit
// status cannot say it: the kernel does not let PID 1 of a namespace kill
// itself with a signal, so it exits 128+signal (tini's convention) and
// Start's side reads the signal from here.
type initResult struct {
	ExitCode int
	Signal   int // 0 if it exited
}

// runPID1 is the init's life as PID 1 of the task's PID namespace, what
// tini (Docker's --init) does: the command runs as its child, in a process
// group of its own; every signal the init receives (Stop's, sent to it from
// the host) goes on to that group, since the kernel would drop a signal
// PID 1 has no handler for; orphans the task leaves are reparented to the
// init, which reaps them. When the command ends the init reports how, and
// exits: the kernel then kills whatever is left in the namespace, a
// process that left the task's group (setsid) included. The init has
// already become the task's user. It returns only if the command could
// not be started.
func runPID1(path string, argv, env []string) error {
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	_ = syscall.Close(statusFD) // EOF: the command runs
	exited := make(chan waitResult, 1)
	go func() { exited <- reap(pid) }()
	for {
		select {
		case sig := <-sigs:
			forward(pid, sig)
		case w := <-exited:
			signal.Stop(sigs)
			if w.err != nil {
				fmt.Fprintf(os.Stderr, "berth-exec-init: wait for the task: %v\n", w.err)
				syscall.Exit(255)
			}
			// Straight out, as the command did: the init has nothing to
			// flush (os.Exit would run exit hooks first, and in a -race
			// build sleep a second after a 0).
			syscall.Exit(report(w.status))
		}
	}
}

// forward sends a signal the init received to the task's process group
// (to the command alone if the group is gone), except the ones the init
// gets for itself: SIGCHLD, and SIGURG, which Go's runtime uses.
func forward(pid int, sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok || s == syscall.SIGCHLD || s == syscall.SIGURG {
		return
	}
	if err := syscall.Kill(-pid, s); errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, s)
	}
}

type waitResult struct {
	status syscall.WaitStatus
	err    error
}

// reap waits for every child of the init (the command, and the orphans
// reparented to it) until the command is gone, and returns its status.
func reap(pid int) waitResult {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return waitResult{err: err}
		case wpid == pid:
			return waitResult{status: ws}
		}
	}
}

// report writes how the command ended to the result pipe, and returns the
// init's exit code: the command's, or 128+signal. The write fails, and
// nothing more is lost, when the client that started the task is gone.
func report(ws syscall.WaitStatus) int {
	res := initResult{ExitCode: ws.ExitStatus()}
	code := res.ExitCode
	if ws.Signaled() {
		res = initResult{ExitCode: -1, Signal: int(ws.Signal())}
		code = 128 + res.Signal
	}
	if f := os.NewFile(resultFD, "result"); f != nil {
		_ = json.NewEncoder(f).Encode(res)
		_ = f.Close()
	}
	return code
}
