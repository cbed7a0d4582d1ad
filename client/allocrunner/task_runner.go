package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"maps"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// Task event types.
const (
	EventReceived         = "Received"
	EventSettingUpVolumes = "Setting Up Volumes"
	EventRetryingVolumes  = "Retrying Volume Setup"
	EventSetupFailure     = "Setup Failure"
	EventDriverFailure    = "Driver Failure"
	EventStarted          = "Started"
	EventTerminated       = "Terminated"
	EventRestarting       = "Restarting"
	EventNotRestarting    = "Not Restarting"
	EventKilling          = "Killing"
	EventKilled           = "Killed"
	EventSiblingFailed    = "Sibling Task Failed"
	EventOOMKilled        = "OOM Killed"
)

const (
	defaultKillTimeout = 5 * time.Second
	defaultKillSignal  = syscall.SIGTERM
	// startTimeout bounds a task's start: its mounts and the exec.
	startTimeout = time.Minute
	// The exec driver's name.
	driverExec = "exec"
)

// taskRunner runs one task: start, wait, restart per policy, kill.
type taskRunner struct {
	r       *Runner
	task    *structs.Task
	cfg     *exec.TaskConfig      // what every driver's start is made of
	docker  *structs.DockerConfig // a docker task's config; nil for exec
	restart restartTracker
	batch   bool
	plugin  *pluginTask // set for a task with a csi_plugin block

	attached taskHandle // a task still running from before a client restart
	// unknown is why the task recorded before a client restart could not
	// be found again, nor found gone: it may still run, so it is neither
	// started again (a second writer) nor forgotten.
	unknown error

	kill     chan struct{}
	killOnce sync.Once
	killWhy  *structs.TaskEvent // the event that says why, if not a stop
	done     chan struct{}
}

// execConfig reads the task's exec config (structs.ExecCommand).
func execConfig(t *structs.Task) (string, []string, error) {
	if t.Driver != driverExec {
		return "", nil, fmt.Errorf("driver %q is not supported; use \"exec\" or \"docker\"", t.Driver)
	}
	cmd, args, err := structs.ExecCommand(t.Config)
	if err != nil {
		return "", nil, fmt.Errorf("config: %w", err)
	}
	return cmd, args, nil
}

// killSignal is the signal a stop sends the task first: its kill_signal
// (one of structs.KillSignals, by name), SIGTERM by default.
func killSignal(t *structs.Task) syscall.Signal {
	if sig := unix.SignalNum(t.KillSignal); sig != 0 {
		return sig
	}
	return defaultKillSignal
}

func killTimeout(t *structs.Task) time.Duration {
	if t.KillTimeout > 0 {
		return t.KillTimeout
	}
	return defaultKillTimeout
}

// stop asks the task to stop (once); why, if set, is recorded first.
func (tr *taskRunner) stop(why *structs.TaskEvent) {
	tr.killOnce.Do(func() {
		tr.killWhy = why
		close(tr.kill)
	})
}

// run runs the task until it is done, killed, or ctx (the runner's life)
// ends, which leaves the task running.
func (tr *taskRunner) run(ctx context.Context) {
	defer close(tr.done)
	runsOn := false // the client stops while the task runs: it keeps its cores
	defer func() {
		if !runsOn {
			tr.releaseCores()
		}
	}()
	name := tr.task.Name
	if tr.unknown != nil {
		tr.r.updateTask(name, markDead(true), event(EventDriverFailure,
			fmt.Sprintf("cannot tell whether the task started before the client restarted still runs (%v); not starting it again", tr.unknown)))
		return
	}
	h := tr.attached
	for {
		if h == nil {
			select {
			case <-tr.kill:
				tr.killed(nil, exec.ExitResult{})
				return
			case <-ctx.Done():
				return
			default:
			}
			var err error
			h, err = tr.start(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				ev := event(EventDriverFailure, err.Error())
				if startRefused(err) {
					tr.r.updateTask(name, markDead(true), ev)
					return
				}
				tr.r.updateTask(name, nil, ev)
				if !tr.restartOrFail(ctx, "") {
					return
				}
				continue
			}
		}
		supervised := closedChan
		if tr.plugin != nil {
			supervised = tr.plugin.supervise(ctx, h, killSignal(tr.task), killTimeout(tr.task))
		}
		unwatch := tr.followSharedCores(ctx, h)
		select {
		case <-h.Done():
		case <-tr.kill:
			res, ok := tr.stopHandle(ctx, h)
			if ok {
				<-supervised
				unwatch()
				tr.killed(h, res)
			}
			runsOn = !ok // the client is stopping mid-kill: the handle is kept
			return
		case <-ctx.Done():
			unwatch()
			runsOn = true
			return // the client is stopping; the task runs on
		}
		unwatch()
		<-supervised // the plugin is deregistered before any restart
		res := h.Result()
		msg, why := res.String(), ""
		if h.oomKilled() {
			why = fmt.Sprintf("it ran out of memory: the kernel killed it at its limit of %d MiB",
				tr.task.ResourcesOrDefault().MemoryLimitMB())
			msg += " (" + why + ")"
			tr.r.updateTask(name, nil, event(EventOOMKilled, fmt.Sprintf("the task %s; raise resources { memory } "+
				"(or memory_max) if it needs more", why)))
		}
		tr.forget()
		h = nil
		tr.r.updateTask(name, nil, event(EventTerminated, msg))
		if tr.batch && res.Successful() {
			tr.r.updateTask(name, markDead(false))
			return
		}
		if !tr.restartOrFail(ctx, why) {
			return
		}
	}
}

// startRefused reports a start that fails the same way however often it
// is tried: the task, or what this client allows, must change first.
func startRefused(err error) bool {
	for _, target := range []error{exec.ErrInvalidTask, exec.ErrNeedsRoot, exec.ErrRootNotAllowed, exec.ErrUnknownUser, exec.ErrUserNotAllowed,
		docker.ErrInvalidTask, docker.ErrPrivilegedNotAllowed, docker.ErrCapsNotAllowed, docker.ErrHostNetworkNotAllowed,
		docker.ErrRootNotAllowed, docker.ErrImageMissing} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// start starts the task and records its handle.
func (tr *taskRunner) start(ctx context.Context) (taskHandle, error) {
	cfg := tr.cfg
	if tr.plugin != nil {
		ms, env, err := tr.plugin.prestart()
		if err != nil {
			return nil, err
		}
		c := *tr.cfg
		c.Mounts = append(slices.Clone(c.Mounts), ms...)
		c.Env = maps.Clone(c.Env)
		if c.Env == nil {
			c.Env = map[string]string{}
		}
		maps.Copy(c.Env, env)
		cfg = &c
	}
	cores, cpuset, err := tr.takeCores(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Limits != nil {
		c := *cfg
		lim := *cfg.Limits
		lim.Cpuset, c.Limits = cpuset, &lim
		cfg = &c
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var h taskHandle
	if tr.docker != nil {
		dh, err := tr.r.cfg.Docker.Start(sctx, tr.r.dockerTask(tr.task, cfg, tr.docker))
		if err != nil {
			return nil, err
		}
		h = dockerHandle{dh}
	} else {
		eh, err := exec.Start(sctx, cfg)
		if err != nil {
			return nil, err
		}
		h = execHandle{eh}
	}
	st := h.saved()
	st.Cores = cores
	if err := tr.r.state.setHandle(tr.task.Name, &st); err != nil {
		tr.r.logger.Warn("cannot record the task's handle; a client restart will not find it", "task", tr.task.Name, "error", err)
	}
	tr.r.updateTask(tr.task.Name, func(ts *structs.TaskState) {
		ts.State = structs.TaskStateRunning
		ts.StartedAt = timeNow()
		ts.FinishedAt = time.Time{}
	}, event(EventStarted, h.describe()))
	return h, nil
}

// restartOrFail waits out the restart delay and returns true, or marks the
// task failed (policy exhausted) or killed and returns false. cause, if
// set, is why the task ended, for the events.
func (tr *taskRunner) restartOrFail(ctx context.Context, cause string) bool {
	delay, ok, why := tr.restart.next(timeNow())
	if cause != "" {
		cause = ": " + cause
	}
	if !ok {
		tr.r.updateTask(tr.task.Name, markDead(true), event(EventNotRestarting, why+cause))
		return false
	}
	tr.r.updateTask(tr.task.Name, func(ts *structs.TaskState) {
		ts.State = structs.TaskStatePending
		ts.Restarts++
	}, event(EventRestarting, fmt.Sprintf("restarting in %s%s", delay, cause)))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-tr.kill:
		tr.killed(nil, exec.ExitResult{})
		return false
	case <-ctx.Done():
		return false
	}
}

// stopHandle signals the task, kills it after its kill timeout, and waits;
// false if ctx ended first.
func (tr *taskRunner) stopHandle(ctx context.Context, h taskHandle) (exec.ExitResult, bool) {
	tr.noteKillReason()
	timeout := killTimeout(tr.task)
	tr.r.stamp(structs.StepSignalSent)
	tr.r.updateTask(tr.task.Name, nil, event(EventKilling,
		fmt.Sprintf("sent %s; SIGKILL after %s", killSignal(tr.task), timeout)))
	// A fence's deadline cuts the kill timeout short.
	if err := h.StopSooner(ctx, killSignal(tr.task), timeout, tr.r.killNow); err != nil {
		tr.r.logger.Warn("cannot stop task", "task", tr.task.Name, "error", err)
	}
	select {
	case <-h.Done():
		if err := h.CleanupError(); err != nil {
			tr.r.logger.Warn("cannot detach what the task mounted", "task", tr.task.Name, "error", err)
		}
		return h.Result(), true
	default:
		return exec.ExitResult{}, false
	}
}

// noteKillReason records why the task is killed, when it is not a stop.
func (tr *taskRunner) noteKillReason() {
	if tr.killWhy != nil {
		tr.r.updateTask(tr.task.Name, nil, tr.killWhy)
	}
}

// killed records a stop the servers (or a failed sibling) asked for.
func (tr *taskRunner) killed(h taskHandle, res exec.ExitResult) {
	msg := "not running"
	if h == nil {
		tr.noteKillReason()
	} else {
		msg = res.String()
		tr.forget()
	}
	tr.r.updateTask(tr.task.Name, markDead(false), event(EventKilled, msg))
}

// forget drops the task's recorded handle.
func (tr *taskRunner) forget() {
	if err := tr.r.state.setHandle(tr.task.Name, nil); err != nil {
		tr.r.logger.Warn("cannot forget the task's handle", "task", tr.task.Name, "error", err)
	}
}

func markDead(failed bool) func(*structs.TaskState) {
	return func(ts *structs.TaskState) {
		ts.State = structs.TaskStateDead
		ts.Failed = ts.Failed || failed
		ts.FinishedAt = timeNow()
	}
}

func event(typ, msg string) *structs.TaskEvent {
	return &structs.TaskEvent{Type: typ, Message: msg, Time: timeNow()}
}

var timeNow = time.Now

// closedChan is a done channel for what there is nothing to wait for.
var closedChan = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
