package docker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
)

// ExitResult is how a task's container ended.
type ExitResult struct {
	// ExitCode is the container's; a process killed by signal n exits
	// 128+n.
	ExitCode int
	// Signal is n when the exit code is 128+n and Stop sent signal n: the
	// task was killed by its stop. 0 otherwise.
	Signal int
	// OOMKilled: the kernel's OOM killer killed the container's process.
	OOMKilled bool
	// Err is set when the exit is unknown (the container vanished).
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
	case r.OOMKilled:
		return fmt.Sprintf("exit code %d (out of memory)", r.ExitCode)
	}
	return fmt.Sprintf("exit code %d", r.ExitCode)
}

// HandleState is what a client keeps of a running task to find it again
// after a restart. The container's labels hold the rest.
type HandleState struct {
	TaskName    string
	ContainerID string
}

// Handle is a running (or finished) task's container.
type Handle struct {
	d      *Driver
	state  HandleState
	logs   logFiles
	logger hclog.Logger
	done   chan struct{}

	mu         sync.Mutex
	sent       map[int]bool // signals Stop sent
	result     ExitResult
	cleanupErr error
}

func newHandle(d *Driver, s HandleState, logs logFiles, logger hclog.Logger) *Handle {
	return &Handle{d: d, state: s, logs: logs, logger: logger,
		done: make(chan struct{}), sent: map[int]bool{}}
}

// State is the handle's persistable form.
func (h *Handle) State() HandleState { return h.state }

// ContainerID is the task's container.
func (h *Handle) ContainerID() string { return h.state.ContainerID }

// Done is closed once the container has exited, its logs are copied and
// it is removed.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Result is how the task ended; valid once Done is closed.
func (h *Handle) Result() ExitResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.result
}

// CleanupError is the error of removing the exited container, if any
// (Remove, or the next start under its name, retries); valid once Done is
// closed.
func (h *Handle) CleanupError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cleanupErr
}

// Timings of the handle's goroutine, variables for tests.
var (
	// logGrace is how long the log copy may go on once the container
	// exited (the engine ends the stream at the exit; this bounds a
	// stream that does not end).
	logGrace = 10 * time.Second
	// retry paces re-waits and re-reads when the engine's stream breaks.
	retry = backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.2}
)

// run watches the container until it exits (waitC and errC are a wait
// registered before the start; nil to register one now), copies its logs
// from since, removes it and closes Done. If ctx ends first (the driver
// closed), it returns leaving the container and Done alone.
func (h *Handle) run(ctx context.Context, waitC <-chan container.WaitResponse, errC <-chan error, since time.Time) {
	exited := make(chan struct{})
	logCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		h.copyLogs(logCtx, since, exited)
	}()

	res, ok := h.waitExit(ctx, waitC, errC)
	if !ok {
		stopLogs()
		<-logsDone
		return
	}
	close(exited)
	t := time.NewTimer(logGrace)
	select {
	case <-logsDone:
	case <-t.C:
		h.logger.Warn("the container's log stream did not end after its exit; stopped copying")
		stopLogs()
		<-logsDone
	}
	t.Stop()

	rctx, cancel := context.WithTimeout(ctx, removeTimeout)
	err := h.d.Remove(rctx, h.state.ContainerID)
	cancel()
	if err != nil {
		h.logger.Warn("could not remove the exited container", "error", err)
		err = fmt.Errorf("task %q: remove exited container %s: %w", h.state.TaskName, shortID(h.state.ContainerID), err)
	}
	h.mu.Lock()
	if res.Err == nil && res.ExitCode > 128 && h.sent[res.ExitCode-128] {
		res.Signal = res.ExitCode - 128
	}
	h.result = res
	h.cleanupErr = err
	h.mu.Unlock()
	h.logger.Debug("container exited", "result", res.String())
	close(h.done)
}

// waitExit waits for the container to stop running and reads how it
// ended from an inspect. A broken wait is registered again (with
// backoff); ok is false only when ctx ended first.
func (h *Handle) waitExit(ctx context.Context, waitC <-chan container.WaitResponse, errC <-chan error) (ExitResult, bool) {
	id := h.state.ContainerID
	for attempt := 1; ; attempt++ {
		if waitC == nil {
			waitC, errC = h.d.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
		}
		select {
		case <-waitC:
		case err := <-errC:
			if ctx.Err() != nil {
				return ExitResult{}, false
			}
			h.logger.Debug("waiting for the container broke; checking it", "error", err)
		case <-ctx.Done():
			drainWait(waitC, errC)
			return ExitResult{}, false
		}
		waitC, errC = nil, nil
		c, err := h.d.cli.ContainerInspect(ctx, id)
		switch {
		case ctx.Err() != nil:
			return ExitResult{}, false
		case cerrdefs.IsNotFound(err):
			return ExitResult{ExitCode: -1, Err: fmt.Errorf("task %q: container %s was removed while it ran; its exit is unknown",
				h.state.TaskName, shortID(id))}, true
		case err != nil:
			h.logger.Warn("could not inspect the container; retrying", "error", err)
		case c.ContainerJSONBase == nil || c.State == nil:
			h.logger.Warn("the engine's inspect has no state; retrying")
		case !c.State.Running:
			return ExitResult{ExitCode: c.State.ExitCode, OOMKilled: c.State.OOMKilled}, true
		}
		if !backoff.Sleep(ctx, retry.Delay(attempt)) {
			return ExitResult{}, false
		}
	}
}

// drainWait takes the one answer a ContainerWait whose context ended still
// sends (the client's goroutine blocks until its result is taken).
func drainWait(waitC <-chan container.WaitResponse, errC <-chan error) {
	go func() {
		select {
		case <-waitC:
		case <-errC:
		}
	}()
}

// Stop sends sig to the container, and SIGKILL after timeout if it still
// runs; it returns once Done is closed, or with ctx's error.
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
	if err := h.kill(ctx, sig); err != nil {
		return err
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
	if err := h.kill(ctx, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kill sends sig to the container's main process; a container that no
// longer runs is no error (Done follows).
func (h *Handle) kill(ctx context.Context, sig syscall.Signal) error {
	h.mu.Lock()
	h.sent[int(sig)] = true
	h.mu.Unlock()
	err := h.d.cli.ContainerKill(ctx, h.state.ContainerID, strconv.Itoa(int(sig)))
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) { // conflict: not running
		return nil
	}
	return fmt.Errorf("task %q: send %s to container %s: %w", h.state.TaskName, sig, shortID(h.state.ContainerID), err)
}

// SetCpuset moves the container onto other cores.
func (h *Handle) SetCpuset(ctx context.Context, cpuset string) error {
	_, err := h.d.cli.ContainerUpdate(ctx, h.state.ContainerID, container.UpdateConfig{Resources: container.Resources{CpusetCpus: cpuset}})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("task %q: set container %s's cores to %s: %w", h.state.TaskName, shortID(h.state.ContainerID), cpuset, err)
	}
	return nil
}

// Reattach finds a task's container a previous client started. It
// returns ErrGone when the container no longer runs (the caller removes
// it).
func (d *Driver) Reattach(ctx context.Context, s HandleState) (*Handle, error) {
	if s.ContainerID == "" {
		return nil, fmt.Errorf("task %q: %w (no container ID)", s.TaskName, ErrGone)
	}
	c, err := d.cli.ContainerInspect(ctx, s.ContainerID)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil, fmt.Errorf("task %q: container %s: %w (removed)", s.TaskName, shortID(s.ContainerID), ErrGone)
	case err != nil:
		return nil, fmt.Errorf("task %q: inspect container %s: %w", s.TaskName, shortID(s.ContainerID), err)
	case c.ContainerJSONBase == nil || c.State == nil || c.Config == nil:
		return nil, fmt.Errorf("task %q: inspect container %s: the engine's answer has no state", s.TaskName, shortID(s.ContainerID))
	case !c.State.Running:
		return nil, fmt.Errorf("task %q: container %s: %w (%s, exit code %d)", s.TaskName, shortID(s.ContainerID), ErrGone,
			c.State.Status, c.State.ExitCode)
	}
	labels := c.Config.Labels
	stdout, stderr := labels[LabelStdoutPath], labels[LabelStderrPath]
	if stdout == "" || stderr == "" {
		return nil, fmt.Errorf("%w: task %q: container %s has no log path labels (%s, %s); berth did not start it",
			ErrInvalidTask, s.TaskName, shortID(s.ContainerID), LabelStdoutPath, LabelStderrPath)
	}
	log := d.logger.With("task", s.TaskName, "alloc_id", labels[LabelAllocID], "container_id", shortID(c.ID))
	// A container of a client before log roots were labelled: each log
	// beneath its own dir.
	logs := logFiles{root: labels[LabelLogRoot], stdout: stdout, stderr: stderr}
	h := newHandle(d, HandleState{TaskName: s.TaskName, ContainerID: c.ID}, logs, log)
	since := logs.copiedUntil()
	if err := d.goHandle(func() { h.run(d.ctx, nil, nil, since) }); err != nil {
		return nil, fmt.Errorf("task %q: %w", s.TaskName, err)
	}
	log.Debug("reattached to the container", "logs_since", since)
	return h, nil
}
