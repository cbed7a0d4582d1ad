package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// taskHandle is a running (or finished) task, whatever its driver.
type taskHandle interface {
	Done() <-chan struct{}
	Result() exec.ExitResult
	Stop(ctx context.Context, sig syscall.Signal, timeout time.Duration) error
	StopSooner(ctx context.Context, sig syscall.Signal, timeout time.Duration, killNow <-chan struct{}) error
	// CleanupError reports what could not be undone once the task was
	// gone (mounts it left), nil when nothing was left.
	CleanupError() error
	// saved is what the alloc state keeps to find the task again after a
	// client restart.
	saved() savedHandle
	// describe names the task's process for events and logs.
	describe() string
	// oomKilled reports an exit the kernel forced for lack of memory.
	oomKilled() bool
	// setCpuset moves the task onto other cores.
	setCpuset(ctx context.Context, cpuset string) error
}

// savedHandle is a running task as the alloc state keeps it. Driver ""
// is exec: a state file written before other drivers existed reads as
// one, since exec's fields sit at the top level.
type savedHandle struct {
	exec.HandleState
	Driver      string `json:",omitempty"`
	ContainerID string `json:",omitempty"`
	// Cores are the node's cores the task has for its own.
	Cores []int `json:",omitempty"`
}

// execHandle is an exec task's handle.
type execHandle struct{ *exec.Handle }

func (h execHandle) saved() savedHandle { return savedHandle{HandleState: h.State()} }

func (h execHandle) describe() string { return fmt.Sprintf("pid %d", h.Pid()) }

func (h execHandle) oomKilled() bool { return h.Handle.Result().OOMKilled }

func (h execHandle) setCpuset(_ context.Context, cpuset string) error { return h.SetCpuset(cpuset) }

// dockerHandle is a docker task's handle.
type dockerHandle struct{ *docker.Handle }

func (h dockerHandle) saved() savedHandle {
	st := h.State()
	return savedHandle{HandleState: exec.HandleState{TaskName: st.TaskName}, Driver: structs.DriverDocker, ContainerID: st.ContainerID}
}

func (h dockerHandle) describe() string { return "container " + shortID(h.ContainerID()) }

func (h dockerHandle) oomKilled() bool { return h.Handle.Result().OOMKilled }

func (h dockerHandle) setCpuset(ctx context.Context, cpuset string) error {
	return h.Handle.SetCpuset(ctx, cpuset)
}

// Result is the container's exit as exec reports a process's.
func (h dockerHandle) Result() exec.ExitResult {
	r := h.Handle.Result()
	return exec.ExitResult{ExitCode: r.ExitCode, Signal: r.Signal, Err: r.Err}
}

// shortID is a container ID as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// reattachWait bounds how long reattachRecorded retries a driver that
// cannot tell whether a recorded task still runs.
var reattachWait = 30 * time.Second

// reattachRecorded finds a task recorded before a client restart: its
// handle, or nil when it runs no more (gone). A driver that cannot tell
// (the engine does not answer yet) is asked again, with backoff, for up
// to reattachWait; an error then means the task may still run, and must
// be neither started again nor forgotten.
func reattachRecorded(ctx context.Context, s savedHandle, d *docker.Driver) (taskHandle, error) {
	ctx, cancel := context.WithTimeout(ctx, reattachWait)
	defer cancel()
	var h taskHandle
	err := backoff.Retry(ctx, backoff.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}, isGone,
		func(ctx context.Context) error {
			var err error
			h, err = reattach(ctx, s, d)
			return err
		})
	switch {
	case err == nil:
		return h, nil
	case isGone(err):
		return nil, nil
	}
	return nil, err
}

// isGone reports a recorded task that runs no more.
func isGone(err error) bool { return errors.Is(err, exec.ErrGone) || errors.Is(err, docker.ErrGone) }

// reattach finds a task recorded before a client restart, once: ErrGone
// (exec's or docker's) means it runs no more; another error, that its
// driver cannot tell now. d is the client's docker driver, nil when it has
// none.
func reattach(ctx context.Context, s savedHandle, d *docker.Driver) (taskHandle, error) {
	switch s.Driver {
	case "", structs.DriverExec:
		h, err := exec.Reattach(s.HandleState)
		if err != nil {
			return nil, err
		}
		return execHandle{h}, nil
	case structs.DriverDocker:
		if d == nil {
			return nil, fmt.Errorf("task %q: its container %s was started by the docker driver, which this client no longer runs; "+
				"enable driver \"docker\" or remove the container", s.TaskName, shortID(s.ContainerID))
		}
		h, err := d.Reattach(ctx, docker.HandleState{TaskName: s.TaskName, ContainerID: s.ContainerID})
		if err != nil {
			if errors.Is(err, docker.ErrGone) {
				_ = d.Remove(ctx, s.ContainerID) // exited while the client was away
			}
			return nil, err
		}
		return dockerHandle{h}, nil
	}
	return nil, fmt.Errorf("task %q: driver %q of a recorded task is not known to this client", s.TaskName, s.Driver)
}
