package allocrunner

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/drivers/exec"
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
}

// savedHandle is a running task as the alloc state keeps it. Driver ""
// is exec: a state file written before other drivers existed reads as
// one, since exec's fields sit at the top level.
type savedHandle struct {
	exec.HandleState
	Driver      string `json:",omitempty"`
	ContainerID string `json:",omitempty"`
}

// execHandle is an exec task's handle.
type execHandle struct{ *exec.Handle }

func (h execHandle) saved() savedHandle { return savedHandle{HandleState: h.State()} }

func (h execHandle) describe() string { return fmt.Sprintf("pid %d", h.Pid()) }

// reattach finds a task recorded before a client restart; an error means
// it runs no more.
func reattach(s savedHandle) (taskHandle, error) {
	switch s.Driver {
	case "", driverExec:
		h, err := exec.Reattach(s.HandleState)
		if err != nil {
			return nil, err
		}
		return execHandle{h}, nil
	}
	return nil, fmt.Errorf("task %q: driver %q of a recorded task is not known to this client", s.TaskName, s.Driver)
}
