package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// maxTaskEvents is how many events a task keeps, the latest.
const maxTaskEvents = 16

// Runner runs one allocation. Build it with New, run it with Run.
type Runner struct {
	cfg      Config
	logger   hclog.Logger
	tg       *structs.TaskGroup
	allocDir string
	state    *stateStore

	ctx      context.Context // the runner's life: Shutdown ends it
	cancel   context.CancelFunc
	stopCh   chan struct{} // closed when the servers want the alloc stopped
	stopOnce sync.Once
	done     chan struct{}

	mu          sync.Mutex
	status      string
	description string
	taskStates  map[string]*structs.TaskState
	finished    bool // tasks dead and volumes released: the status may be terminal
	failReason  string
	vols        []*mountedVolume
	// creds is who each exec task runs as (prepareUsers), nil before.
	creds map[string]*exec.Credential
	// timeline is the client's steps (structs.ClientStep), sent with
	// every report: the servers keep the first stamp of each.
	timeline structs.Timeline

	fenceReason string        // set by Fence
	fenceEndsIt bool          // the fence, not the servers, stopped it: it ends lost
	killNow     chan struct{} // closed when a fence's kill deadline passes
	killNowOnce sync.Once
}

// New builds a runner for the alloc. An alloc the servers already track
// (a client restart) keeps the task states they have.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckName("alloc ID", cfg.Alloc.ID); err != nil {
		return nil, fmt.Errorf("allocrunner: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.OnUpdate == nil {
		cfg.OnUpdate = func(*structs.Allocation) {}
	}
	alloc := cfg.Alloc.Copy()
	cfg.Alloc = alloc
	st, err := openState(stateFile(cfg.DataDir, alloc.ID))
	if err != nil {
		return nil, fmt.Errorf("allocrunner: alloc %s: %w", alloc.ID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{
		cfg:        cfg,
		logger:     cfg.Logger.Named("alloc_runner").With("alloc_id", alloc.ID),
		tg:         alloc.LookupTaskGroup(),
		allocDir:   AllocDir(cfg.DataDir, alloc.ID),
		state:      st,
		ctx:        ctx,
		cancel:     cancel,
		stopCh:     make(chan struct{}),
		done:       make(chan struct{}),
		killNow:    make(chan struct{}),
		status:     structs.AllocClientStatusPending,
		taskStates: map[string]*structs.TaskState{},
	}
	if r.tg != nil {
		for _, t := range r.tg.Tasks {
			if ts := alloc.TaskStates[t.Name]; ts != nil {
				r.taskStates[t.Name] = ts.Copy()
			} else {
				r.taskStates[t.Name] = &structs.TaskState{State: structs.TaskStatePending,
					Events: []*structs.TaskEvent{event(EventReceived, "task received by the client")}}
			}
		}
	}
	st.setFenceable(r.Fenceable())
	if cfg.Cores != nil {
		// Before any runner of this client starts a task: the cores its
		// tasks still hold after a client restart are theirs.
		for task, hs := range st.handles() {
			if len(hs.Cores) > 0 {
				cfg.Cores.Claim(alloc.ID+"/"+task, hs.Cores)
			}
		}
	}
	if alloc.ClientStatus == structs.AllocClientStatusRunning {
		r.status = alloc.ClientStatus // restored: until the tasks say otherwise
	}
	if alloc.DesiredStatus == structs.AllocDesiredStatusStop {
		r.Stop()
	}
	return r, nil
}

// ID is the alloc's ID.
func (r *Runner) ID() string { return r.cfg.Alloc.ID }

// Done is closed when Run has returned.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Update passes on the servers' latest view of the alloc; only its desired
// status is read: stop stops it.
func (r *Runner) Update(alloc *structs.Allocation) {
	if alloc.DesiredStatus == structs.AllocDesiredStatusStop {
		r.stamp(structs.StepStopSeen)
		r.Stop()
	}
}

// stamp records a step of the client's now; the next report carries it.
func (r *Runner) stamp(step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline = r.timeline.Stamp(step, time.Now())
}

// Stop stops the alloc, as a desired status of stop does: its tasks are
// killed, its volumes unmounted, and it completes.
func (r *Runner) Stop() { r.stopOnce.Do(func() { close(r.stopCh) }) }

// Shutdown stops running the alloc without touching it (the client is
// stopping): tasks keep running and volumes stay mounted, for the next
// client to find. It returns once Run has.
func (r *Runner) Shutdown() {
	r.cancel()
	<-r.done
}

// Alloc is the alloc's client view: ID, ClientStatus, ClientDescription
// and TaskStates.
func (r *Runner) Alloc() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.viewLocked()
}

// HasTask reports whether the alloc's group has the task.
func (r *Runner) HasTask(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.taskStates[name]
	return ok
}

// Destroy removes the alloc dir and state of a runner that finished (its
// tasks dead, its volumes released). It refuses a runner that was shut
// down (the client stopping): its tasks may still run, and their handles
// are what the next client reattaches to or kills. It refuses while
// anything is mounted under the alloc dir: removing it would reach into
// the mounted file system.
func (r *Runner) Destroy() error {
	select {
	case <-r.done:
	default:
		return fmt.Errorf("allocrunner: alloc %s is still running", r.ID())
	}
	r.mu.Lock()
	finished := r.finished
	r.mu.Unlock()
	if !finished {
		return fmt.Errorf("allocrunner: alloc %s was shut down, not finished: keeping its state for the next client", r.ID())
	}
	if mps, err := exec.MountsUnder(r.allocDir); err != nil || len(mps) > 0 {
		return errors.Join(fmt.Errorf("allocrunner: alloc %s: not removing %s: mounts remain under it: %v",
			r.ID(), r.allocDir, mps), err)
	}
	if err := os.RemoveAll(r.allocDir); err != nil {
		return fmt.Errorf("allocrunner: alloc %s: %w", r.ID(), err)
	}
	return r.state.remove()
}

func (r *Runner) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// Run runs the alloc until it is done (its tasks finished or failed, or
// stopped, and its volumes released) or Shutdown.
func (r *Runner) Run() {
	defer close(r.done)
	defer r.cancel()
	r.mu.Lock()
	r.timeline = r.timeline.Stamp(structs.StepReceived, time.Now())
	r.recomputeLocked()
	r.emitLocked()
	r.mu.Unlock()
	if err := r.check(); err != nil {
		r.failAll(EventSetupFailure, err.Error())
		r.finish(nil)
		return
	}
	runners := r.taskRunners()
	if err := buildAllocDir(r.allocDir, taskNames(r.tg)); err != nil && !r.stopping() {
		r.logger.Error("cannot build the alloc dir", "error", err)
		r.failSetup(runners, err, nil)
		return
	} else if err != nil {
		// Stopped anyway: what still runs is killed and the volumes
		// released below, the entry left as the task left it.
		r.logger.Warn("the alloc dir holds an entry a task put there; stopping the alloc", "error", err)
	}

	if r.stopping() {
		// Stopped before it ran here, or while this client was down:
		// kill what still runs, then release the volumes, unclaimed.
		r.runTasks(runners, true)
		if r.ctx.Err() == nil {
			r.markDead()
			r.finish(r.releaseOnly())
		}
		return
	}
	if err := r.prepareUsers(); err != nil {
		r.logger.Error("cannot run the alloc's tasks as their users", "error", err)
		r.failSetup(runners, err, nil)
		return
	}
	if len(r.tg.Volumes) > 0 {
		for _, tr := range runners {
			r.updateTask(tr.task.Name, nil, event(EventSettingUpVolumes, "confirming the claims the servers reserved and mounting the group's volumes"))
		}
		ctx, cancel := r.untilStop()
		vols, err := r.setupVolumesRetrying(ctx, runners)
		cancel()
		r.mu.Lock()
		r.vols = vols
		r.mu.Unlock()
		if r.ctx.Err() != nil {
			return
		}
		if err != nil && !r.stopping() {
			r.logger.Error("volume setup failed", "error", err)
			r.failSetup(runners, err, vols)
			return
		}
		if r.stopping() {
			r.runTasks(runners, true)
			r.markDead()
			r.finish(vols)
			return
		}
		for _, tr := range runners {
			tr.cfg.Mounts = taskMounts(tr.task, vols)
		}
		r.stamp(structs.StepVolumesMounted)
	}
	r.runTasks(runners, false)
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	vols := r.vols
	r.mu.Unlock()
	r.finish(vols)
}

// check refuses an alloc no task of which can run.
func (r *Runner) check() error {
	if r.tg == nil {
		return fmt.Errorf("the alloc's job has no task group %q", r.cfg.Alloc.TaskGroup)
	}
	if len(r.tg.Tasks) == 0 {
		return fmt.Errorf("task group %q has no tasks", r.tg.Name)
	}
	for _, t := range r.tg.Tasks {
		if err := CheckName("task name", t.Name); err != nil {
			return err
		}
		if err := r.checkDriver(t); err != nil {
			return fmt.Errorf("task %q: %w", t.Name, err)
		}
		if t.CSIPluginConfig != nil {
			if err := r.checkPlugin(t); err != nil {
				return fmt.Errorf("task %q: %w", t.Name, err)
			}
		}
	}
	if task, err := checkVolumeMounts(r.tg); err != nil {
		if task != "" {
			return fmt.Errorf("task %q: %w", task, err)
		}
		return err
	}
	return nil
}

// failSetup fails the alloc for an error of its setup: the tasks a
// restored alloc still runs are killed first, with the error as the
// reason, then the volumes are unmounted.
func (r *Runner) failSetup(runners []*taskRunner, err error, vols []*mountedVolume) {
	why := event(EventSetupFailure, err.Error())
	for _, tr := range runners {
		if tr.attached != nil {
			tr.stop(why)
		}
	}
	r.runTasks(runners, true)
	r.failAll(EventSetupFailure, err.Error())
	r.finish(vols)
}

// untilStop is a context that ends with the runner or a stop.
func (r *Runner) untilStop() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.ctx)
	go func() {
		select {
		case <-r.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// taskRunners builds a runner for each task that is not dead, reattached
// to its process if one still runs from before a client restart.
func (r *Runner) taskRunners() []*taskRunner {
	shared := SharedDir(r.allocDir)
	var out []*taskRunner
	for _, t := range r.tg.Tasks {
		r.mu.Lock()
		dead := r.taskStates[t.Name].State == structs.TaskStateDead
		r.mu.Unlock()
		if dead {
			continue
		}
		var cmd string
		var args []string
		var dc *structs.DockerConfig
		if t.Driver == structs.DriverDocker {
			dc, _ = t.DockerConfig() // checked
		} else {
			cmd, args, _ = execConfig(t) // checked
		}
		tr := &taskRunner{
			r:       r,
			task:    t,
			restart: restartTracker{policy: restartPolicy(t, r.cfg.Alloc.Job.Type)},
			batch:   r.cfg.Alloc.Job.Type == structs.JobTypeBatch,
			kill:    make(chan struct{}),
			done:    make(chan struct{}),
			docker:  dc,
			cfg: &exec.TaskConfig{
				AllocID:    r.cfg.Alloc.ID,
				TaskName:   t.Name,
				TaskDir:    TaskDir(r.allocDir, t.Name),
				AllocDir:   shared,
				StdoutPath: LogPath(r.allocDir, t.Name, LogStdout),
				StderrPath: LogPath(r.allocDir, t.Name, LogStderr),
				LogRoot:    r.allocDir,
				Command:    cmd,
				Args:       args,
				Env:        t.Env,
				Extra: map[string]string{
					"BERTH_NODE_ID":    r.cfg.NodeID,
					"BERTH_NODE_NAME":  r.cfg.NodeName,
					"BERTH_JOB_ID":     r.cfg.Alloc.JobID,
					"BERTH_GROUP_NAME": r.tg.Name,
				},
				User:      t.RunAs(),
				AllowRoot: r.cfg.AllowRootTasks,
				Users:     r.cfg.Users,
			},
		}
		if enforced() || t.Driver == structs.DriverDocker {
			tr.cfg.Limits = limits(t, r.cfg.CoreMHz, "")
		} else if tr.attached == nil {
			r.updateTask(t.Name, nil, event(EventResourcesNotEnforced,
				"the client does not run as root, so it makes no cgroups: the task's cpu and memory are not limited"))
		}
		if t.CSIPluginConfig != nil {
			tr.plugin = newPluginTask(r, t)
		}
		if hs, ok := r.state.handle(t.Name); ok {
			h, err := reattachRecorded(r.ctx, hs, r.cfg.Docker)
			switch {
			case err != nil:
				r.logger.Error("cannot tell whether the task still runs; it is not started again", "task", t.Name, "error", err)
				tr.unknown = err
			case h == nil:
				r.logger.Info("task's process is gone; it will be started again", "task", t.Name)
				tr.forget()
			default:
				r.logger.Info("reattached to task", "task", t.Name, "process", h.describe())
				tr.attached = h
			}
		}
		out = append(out, tr)
	}
	return out
}

// runTasks runs the task runners until they are all done. With onlyKill,
// only reattached tasks run, and are killed at once; the others are left
// as they are. A task that fails kills its siblings; a stop kills all.
func (r *Runner) runTasks(runners []*taskRunner, onlyKill bool) {
	exited := make(chan *taskRunner, len(runners))
	n := 0
	for _, tr := range runners {
		if onlyKill {
			if tr.attached == nil {
				continue
			}
			tr.stop(nil)
		}
		n++
		go func() {
			tr.run(r.ctx)
			exited <- tr
		}()
	}
	stopCh := r.stopCh
	for n > 0 {
		select {
		case tr := <-exited:
			n--
			r.mu.Lock()
			failed := r.taskStates[tr.task.Name].Failed
			r.mu.Unlock()
			if failed {
				why := event(EventSiblingFailed, fmt.Sprintf("task %q failed", tr.task.Name))
				for _, o := range runners {
					o.stop(why)
				}
			}
		case <-stopCh:
			stopCh = nil
			why := r.fenceEvent()
			for _, tr := range runners {
				tr.stop(why)
			}
		case <-r.ctx.Done():
			for ; n > 0; n-- {
				<-exited
			}
			return
		}
	}
}

// releaseOnly finds the volumes of an alloc stopped before it ran here,
// without claiming them, so that whatever a previous client mounted for it
// is unmounted.
func (r *Runner) releaseOnly() []*mountedVolume {
	var vols []*mountedVolume
	if r.cfg.Volumes == nil {
		return nil
	}
	for alias, req := range r.tg.Volumes {
		id, err := volumeID(r.cfg.Alloc, req)
		if err != nil {
			continue
		}
		var get structs.CSIVolumeGetResponse
		err = r.callServers(r.ctx, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id,
			QueryOptions: structs.QueryOptions{Namespace: r.cfg.Alloc.Namespace}}, &get)
		if err != nil || get.Volume == nil {
			r.logger.Warn("cannot read a stopped alloc's volume; the servers will detach it", "volume_id", id, "error", err)
			continue
		}
		vols = append(vols, &mountedVolume{alias: alias, volumeID: id, pluginID: get.Volume.PluginID,
			externalID: get.Volume.ExternalID, readOnly: req.ReadOnly})
	}
	return vols
}

// finish unmounts the volumes (the tasks are dead) and reports the final
// status.
func (r *Runner) finish(vols []*mountedVolume) {
	if len(vols) > 0 && r.cfg.Volumes != nil {
		if err := r.unmountVolumes(r.ctx, vols); err != nil {
			r.logger.Warn("volumes left for the servers to detach", "error", err)
		} else {
			r.stamp(structs.StepVolumesUnmounted)
		}
	}
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = true
	r.recomputeLocked()
	r.emitLocked()
}

// markDead marks every task that is not dead dead: it never ran here.
func (r *Runner) markDead() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ts := range r.taskStates {
		if ts.State != structs.TaskStateDead {
			markDead(false)(ts)
		}
	}
	r.recomputeLocked()
	r.emitLocked()
}

// failAll marks every task that is not dead failed with the event, and
// the alloc failed for that reason.
func (r *Runner) failAll(typ, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failReason = msg
	for _, ts := range r.taskStates {
		if ts.State != structs.TaskStateDead {
			appendEvents(ts, event(typ, msg))
			markDead(true)(ts)
		}
	}
	r.recomputeLocked()
	r.emitLocked()
}

// updateTask changes a task's state, records events, and reports.
func (r *Runner) updateTask(task string, fn func(*structs.TaskState), events ...*structs.TaskEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.taskStates[task]
	if ts == nil {
		return
	}
	appendEvents(ts, events...)
	if fn != nil {
		fn(ts)
	}
	r.recomputeLocked()
	r.emitLocked()
}

func appendEvents(ts *structs.TaskState, events ...*structs.TaskEvent) {
	ts.Events = append(ts.Events, events...)
	if over := len(ts.Events) - maxTaskEvents; over > 0 {
		ts.Events = append([]*structs.TaskEvent(nil), ts.Events[over:]...)
	}
}

// recomputeLocked derives the alloc's client status from its tasks'. A
// terminal status waits for finish: the volumes are released first.
func (r *Runner) recomputeLocked() {
	var failed []string
	allStarted, allDead := true, true
	for _, name := range r.taskOrder() {
		ts := r.taskStates[name]
		if ts.Failed {
			failed = append(failed, name)
		}
		if ts.State != structs.TaskStateDead {
			allDead = false
		}
		if ts.StartedAt.IsZero() && ts.State != structs.TaskStateDead {
			allStarted = false
		}
	}
	if allDead {
		r.timeline = r.timeline.Stamp(structs.StepTasksExited, time.Now())
	} else if allStarted && r.status != structs.AllocClientStatusRunning {
		r.timeline = r.timeline.Stamp(structs.StepTasksStarted, time.Now())
	}
	switch {
	case r.finished && r.fenceEndsIt:
		r.status, r.description = structs.AllocClientStatusLost, r.fenceReason
	case r.finished && r.failReason != "":
		r.status, r.description = structs.AllocClientStatusFailed, r.failReason
	case r.finished && len(failed) > 0:
		r.status, r.description = structs.AllocClientStatusFailed, fmt.Sprintf("task %q failed", failed[0])
	case r.finished && r.stopping():
		r.status, r.description = structs.AllocClientStatusComplete, "stopped: the servers asked for it"
	case r.finished:
		r.status, r.description = structs.AllocClientStatusComplete, "all tasks have completed"
	case allDead || len(failed) > 0 || r.stopping():
		r.description = "stopping tasks and releasing volumes"
	case allStarted:
		r.status, r.description = structs.AllocClientStatusRunning, "tasks are running"
	default:
		r.status, r.description = structs.AllocClientStatusPending, "tasks are starting"
	}
}

func (r *Runner) emitLocked() { r.cfg.OnUpdate(r.viewLocked()) }

func (r *Runner) viewLocked() *structs.Allocation {
	a := &structs.Allocation{
		ID:                r.cfg.Alloc.ID,
		ClientStatus:      r.status,
		ClientDescription: r.description,
		TaskStates:        make(map[string]*structs.TaskState, len(r.taskStates)),
		Timeline:          slices.Clone(r.timeline),
	}
	for k, v := range r.taskStates {
		a.TaskStates[k] = v.Copy()
	}
	return a
}

// taskOrder is the group's task names, none without a group.
func (r *Runner) taskOrder() []string {
	if r.tg == nil {
		return nil
	}
	return taskNames(r.tg)
}

func taskNames(tg *structs.TaskGroup) []string {
	names := make([]string, len(tg.Tasks))
	for i, t := range tg.Tasks {
		names[i] = t.Name
	}
	return names
}
