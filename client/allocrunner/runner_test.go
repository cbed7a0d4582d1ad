package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
	"golang.org/x/sys/unix"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

func TestRunner_Batch_Complete(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `echo "hello $BERTH_TASK_NAME"; echo oops >&2; exit 0`)
	task.Env = map[string]string{"X": "1"}
	r := h.runner(testAlloc(structs.JobTypeBatch, task))
	waitRunner(t, r)

	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusComplete, a.ClientStatus)
	must.Eq(t, "all tasks have completed", a.ClientDescription)
	ts := a.TaskStates["web"]
	must.Eq(t, structs.TaskStateDead, ts.State)
	must.False(t, ts.Failed)
	must.Eq(t, []string{EventReceived, EventStarted, EventTerminated}, eventTypes(ts))
	must.Eq(t, []string{"exit code 0"}, eventMessages(ts, EventTerminated))
	must.Eq(t, []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusComplete}, h.rec.statuses())
	must.Eq(t, "hello web\n", readLog(t, r, "web", LogStdout))
	must.Eq(t, "oops\n", readLog(t, r, "web", LogStderr))
	must.SliceEmpty(t, h.rec.Calls(), must.Sprint("no volumes: no claims, no mounts"))

	for _, d := range []string{"alloc/logs", "alloc/data", "alloc/tmp", "web/local"} {
		fi, err := os.Stat(filepath.Join(AllocDir(h.dataDir, r.ID()), d))
		must.NoError(t, err)
		must.True(t, fi.IsDir())
	}
	must.NoError(t, r.Destroy())
	_, err := os.Stat(AllocDir(h.dataDir, r.ID()))
	must.ErrorIs(t, err, os.ErrNotExist)
}

func TestRunner_Batch_RestartsUntilSuccess(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `n=$(cat local/n 2>/dev/null || echo 0); echo $((n+1)) > local/n; echo run; [ "$n" -ge 1 ]`)
	task.Restart.Attempts = 3
	r := h.runner(testAlloc(structs.JobTypeBatch, task))
	waitRunner(t, r)

	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusComplete, a.ClientStatus)
	ts := a.TaskStates["web"]
	must.Eq(t, 1, ts.Restarts)
	must.Eq(t, []string{EventReceived, EventStarted, EventTerminated, EventRestarting, EventStarted, EventTerminated}, eventTypes(ts))
	must.Eq(t, []string{"exit code 1", "exit code 0"}, eventMessages(ts, EventTerminated))
	must.Eq(t, []string{"restarting in 10ms"}, eventMessages(ts, EventRestarting))
	must.Eq(t, "run\nrun\n", readLog(t, r, "web", LogStdout), must.Sprint("a restart appends to the log"))
}

func TestRunner_Service_FailsBeyondRestartPolicy(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `echo run; exit 0`) // a service task is restarted even after exit 0
	task.Restart.Attempts = 2
	r := h.runner(testAlloc(structs.JobTypeService, task))
	waitRunner(t, r)

	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusFailed, a.ClientStatus)
	must.Eq(t, `task "web" failed`, a.ClientDescription)
	ts := a.TaskStates["web"]
	must.True(t, ts.Failed)
	must.Eq(t, 2, ts.Restarts)
	must.Eq(t, []string{"exceeded 2 restart attempts in 1m0s"}, eventMessages(ts, EventNotRestarting))
	must.Eq(t, "run\nrun\nrun\n", readLog(t, r, "web", LogStdout))
}

func TestRunner_SiblingFailureKillsTheOthers(t *testing.T) {
	h := newHarness(t)
	bad := shTask("bad", `sleep 0.2; exit 2`)
	good := shTask("good", `echo ready; exec sleep 1000`)
	r := h.runner(testAlloc(structs.JobTypeService, good, bad))
	waitRunner(t, r)

	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusFailed, a.ClientStatus)
	must.Eq(t, `task "bad" failed`, a.ClientDescription)
	must.Eq(t, []string{"exit code 2"}, eventMessages(a.TaskStates["bad"], EventTerminated))
	g := a.TaskStates["good"]
	must.False(t, g.Failed)
	must.Eq(t, structs.TaskStateDead, g.State)
	must.Eq(t, []string{EventReceived, EventStarted, EventSiblingFailed, EventKilling, EventKilled}, eventTypes(g))
	must.Eq(t, []string{"killed by signal terminated"}, eventMessages(g, EventKilled))
}

func TestRunner_Stop_SignalThenKill(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	task.KillTimeout = 200 * time.Millisecond
	alloc := testAlloc(structs.JobTypeService, task)
	r := h.runner(alloc)
	waitFor(t, func() bool { return strings.Contains(readLog(t, r, "web", LogStdout), "ready") })

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stop)
	waitRunner(t, r)
	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusComplete, a.ClientStatus)
	must.Eq(t, "stopped: the servers asked for it", a.ClientDescription)
	ts := a.TaskStates["web"]
	must.Eq(t, []string{EventReceived, EventStarted, EventKilling, EventKilled}, eventTypes(ts))
	must.Eq(t, []string{"sent terminated; SIGKILL after 200ms"}, eventMessages(ts, EventKilling))
	must.Eq(t, []string{"killed by signal killed"}, eventMessages(ts, EventKilled))
	must.False(t, ts.Failed)
}

func TestRunner_Refusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(*structs.Allocation)
		want string
	}{
		{"no group", func(a *structs.Allocation) { a.TaskGroup = "nope" }, `the alloc's job has no task group "nope"`},
		{"driver", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Driver = "rkt" },
			`task "web": driver "rkt" is not supported; use "exec" or "docker"`},
		{"docker task with exec's config", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Driver = "docker" },
			`task "web": config: missing image; name the image to run, e.g. image = "postgres:16"`},
		{"docker not enabled", func(a *structs.Allocation) {
			a.Job.TaskGroups[0].Tasks[0].Driver, a.Job.TaskGroups[0].Tasks[0].Config = "docker", map[string]any{"image": "db:1"}
		}, `task "web": the docker driver is not enabled on node "node-1"; enable it with driver "docker" { enabled = true } ` +
			`in the client's config, or run the task with driver = "exec"`},
		{"reserved name", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Name = "alloc" },
			`task name "alloc" is reserved for the alloc's shared dir`},
		{"bad args", func(a *structs.Allocation) { a.Job.TaskGroups[0].Tasks[0].Config["args"] = []any{1} },
			`task "web": config: args[0] must be a string`},
		{"unknown volume", func(a *structs.Allocation) {
			a.Job.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: "d"}}
		}, `task "web": volume_mount at "d": the group has no volume "data"`},
		{"host volume", func(a *structs.Allocation) {
			a.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Type: "host", Source: "x"}}
		}, `group volume "data": type "host" is not supported (only csi)`},
		{"bidirectional read-only", func(a *structs.Allocation) {
			a.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", true)}
			a.Job.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: "/srv",
				PropagationMode: structs.PropagationBidirectional}}
		}, `task "web": volume_mount of "data" at "/srv": bidirectional propagation needs a read-write volume`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
			tc.edit(alloc)
			r := h.runner(alloc)
			waitRunner(t, r)
			a := r.Alloc()
			must.Eq(t, structs.AllocClientStatusFailed, a.ClientStatus)
			must.Eq(t, tc.want, a.ClientDescription)
			for _, ts := range a.TaskStates {
				must.Eq(t, []string{tc.want}, eventMessages(ts, EventSetupFailure))
				must.True(t, ts.Failed)
			}
			must.SliceEmpty(t, h.rec.Calls(), must.Sprint("refused before any claim"))
		})
	}
}

func csiVolume(source string, readOnly bool) *structs.VolumeRequest {
	return &structs.VolumeRequest{Name: source, Type: "csi", Source: source, ReadOnly: readOnly,
		AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
}

// TestRunner_Volumes_Order: claim, mount, start; on stop: kill, then
// unmount, then (only then) complete. The order is read off real
// processes: the task's log and its pid.
func TestRunner_Volumes_Order(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `echo ready; trap 'exit 0' TERM; while :; do sleep 0.05; done`)
	alloc := testAlloc(structs.JobTypeService, task)
	alloc.Name = "job.web[2]"
	data := csiVolume("data", false)
	data.PerAlloc = true
	data.MountOptions = &structs.CSIMountOptions{MountFlags: []string{"noatime"}}
	// The servers reserved a read claim for "logs" (its access mode is
	// reader-only): it mounts read-only although the group did not say so.
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": data, "logs": csiVolume("logs", false)}
	h.servers.readClaims = map[string]bool{"logs": true}
	r := h.runner(alloc)
	waitFor(t, func() bool { return r.Alloc().ClientStatus == structs.AllocClientStatusRunning })

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stop)
	waitRunner(t, r)
	id := alloc.ID
	must.Eq(t, []string{
		"get data[2]",
		"publish data[2] alloc=" + id + " node=node-1",
		"mount data[2] plugin=hostpath ext=ext-data[2] tasks_started=false",
		"get logs",
		"publish logs alloc=" + id + " node=node-1",
		"mount logs plugin=hostpath ext=ext-logs tasks_started=false",
		"unmount data[2] plugin=hostpath ext=ext-data[2] tasks_alive=false status=running",
		"unmount logs plugin=hostpath ext=ext-logs tasks_alive=false status=running",
	}, h.rec.Calls())
	must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus)
	ts := r.Alloc().TaskStates["web"]
	must.Eq(t, []string{EventReceived, EventSettingUpVolumes, EventStarted, EventKilling, EventKilled}, eventTypes(ts))
	// The client's steps, each once, in the order they were taken.
	var steps []string
	for _, st := range r.Alloc().Timeline.Sorted() {
		steps = append(steps, st.Step)
	}
	must.Eq(t, []string{structs.StepReceived, structs.StepVolumesMounted, structs.StepTasksStarted, structs.StepStopSeen,
		structs.StepSignalSent, structs.StepTasksExited, structs.StepVolumesUnmounted}, steps)
	for _, st := range r.Alloc().Timeline {
		must.True(t, structs.ClientStep(st.Step), must.Sprintf("a client reports only its own steps, not %q", st.Step))
	}

	req := h.volumes.requests[0]
	must.Eq(t, &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}, req.MountOptions,
		must.Sprint("the volume's fs type; the group's flags; never a redacted flag"))
	must.Eq(t, map[string]string{"device": "/dev/fake"}, req.PublishContext)
	must.Eq(t, map[string]string{"k": "v"}, req.VolumeContext)
	must.True(t, h.volumes.requests[1].ReadOnly)
}

func TestRunner_Volumes_Failures(t *testing.T) {
	t.Run("missing volume", func(t *testing.T) {
		h := newHarness(t)
		h.servers.missing["data"] = true
		alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitRunner(t, r)
		must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
		must.Eq(t, `volume "data" (group volume "data") does not exist`, r.Alloc().ClientDescription)
		must.Eq(t, []string{"get data"}, h.rec.Calls())
	})
	t.Run("claim refused", func(t *testing.T) {
		h := newHarness(t)
		h.servers.claimErr = structs.NewError(structs.CodeConflict, `volume "data" has the maximum number of writers`)
		alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitRunner(t, r)
		must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
		must.Eq(t, `volume "data": confirm the claim of alloc `+alloc.ID+` on node node-1: volume "data" has the maximum number of writers`,
			r.Alloc().ClientDescription)
		must.SliceLen(t, 6, h.rec.Calls(), must.Sprint("get and publish, three times"))
		must.Eq(t, []string{"Setting Up Volumes", "Retrying Volume Setup", "Retrying Volume Setup", "Setup Failure"},
			eventTypes(r.Alloc().TaskStates["web"])[1:])
		must.StrContains(t, eventMessages(r.Alloc().TaskStates["web"], EventRetryingVolumes)[0], "try 1 of 3 failed: volume \"data\": confirm the claim")
	})
	t.Run("no plugin on the node", func(t *testing.T) {
		h := newHarness(t)
		delete(h.extNode, "hostpath")
		alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitRunner(t, r)
		must.Eq(t, `volume "data": plugin "hostpath" has no node instance on node node-1`, r.Alloc().ClientDescription)
	})
	t.Run("mount fails", func(t *testing.T) {
		h := newHarness(t)
		h.volumes.mountErr = errors.New("NodePublishVolume: Internal: disk on fire")
		h.volumes.failMounts = -1 // always
		alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitRunner(t, r)
		must.Eq(t, `volume "data": mount: NodePublishVolume: Internal: disk on fire`, r.Alloc().ClientDescription)
		calls := h.rec.Calls()
		must.StrHasPrefix(t, "unmount data ", calls[len(calls)-1], must.Sprint("a failed mount is undone"))
	})
	t.Run("a final CSI error is not retried", func(t *testing.T) {
		h := newHarness(t)
		h.volumes.mountErr = fmt.Errorf("NodePublishVolume: %w", csi.ErrCapabilityMismatch)
		h.volumes.failMounts = -1 // always
		alloc := testAlloc(structs.JobTypeService, shTask("web", "exit 0"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitFor(t, func() bool { return r.Alloc().ClientStatus == structs.AllocClientStatusFailed })
		mounts := 0
		for _, c := range h.rec.Calls() {
			if strings.HasPrefix(c, "mount ") {
				mounts++
			}
		}
		must.EqOp(t, 1, mounts, must.Sprint("one try: the answer will not change"))
	})
	t.Run("mount fails, then works", func(t *testing.T) {
		h := newHarness(t)
		h.volumes.mountErr = errors.New("NodeStageVolume: Unavailable: plugin restarting")
		h.volumes.failMounts = 2
		alloc := testAlloc(structs.JobTypeService, shTask("web", "echo ready; exec sleep 1000"))
		alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
		r := h.runner(alloc)
		waitFor(t, func() bool { return r.Alloc().ClientStatus == structs.AllocClientStatusRunning })
		var mounts, unmounts int
		for _, c := range h.rec.Calls() {
			if strings.HasPrefix(c, "mount ") {
				mounts++
			}
			if strings.HasPrefix(c, "unmount ") {
				unmounts++
			}
		}
		must.EqOp(t, 3, mounts)
		must.EqOp(t, 2, unmounts, must.Sprint("each failed try undone before the next"))
	})
}

// TestRunner_Volumes_BindIntoTask: the published path is bound at an
// absolute destination and a relative one, read-only where asked; nothing
// reaches the host's mount table.
func TestRunner_Volumes_BindIntoTask(t *testing.T) {
	needRoot(t)
	h := newHarness(t)
	abs := filepath.Join(openTempDir(t), "srv", "data")
	task := shTask("web", `cat `+abs+`/hello; cat local/logs/hello
if echo x > local/logs/x 2>/dev/null; then echo logs-writable; else echo logs-read-only; fi
echo written > `+abs+`/by-task; echo ready; exec sleep 1000`)
	task.VolumeMounts = []*structs.VolumeMount{
		{Volume: "data", Destination: abs, PropagationMode: structs.PropagationHostToTask},
		{Volume: "logs", Destination: "local/logs"},
	}
	alloc := testAlloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false), "logs": csiVolume("logs", true)}
	r := h.runner(alloc)
	waitFor(t, func() bool { return strings.Contains(readLog(t, r, "web", LogStdout), "ready") })
	must.Eq(t, "hello from data\nhello from logs\nlogs-read-only\nready\n", readLog(t, r, "web", LogStdout))
	b, err := os.ReadFile(filepath.Join(h.volumes.root, "data", "by-task"))
	must.NoError(t, err)
	must.Eq(t, "written\n", string(b))
	mps, err := exec.MountsUnder(AllocDir(h.dataDir, alloc.ID))
	must.NoError(t, err)
	must.SliceEmpty(t, mps)

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stop)
	waitRunner(t, r)
	must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus)
	mps, err = exec.MountsUnder(filepath.Dir(abs))
	must.NoError(t, err)
	must.SliceEmpty(t, mps)
}

// TestRunner_Restore: a client restart leaves the task running; the next
// runner reattaches to it, or starts it again if its process is gone.
func TestRunner_Restore(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `echo started; exec sleep 1000`)
	alloc := testAlloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
	r1 := h.runner(alloc)
	waitFor(t, func() bool { return r1.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	hs, ok := r1.state.handle("web")
	must.True(t, ok)
	r1.Shutdown()
	must.True(t, exec.ProcessAlive(hs.HandleState), must.Sprint("a client shutdown leaves the task running"))
	must.StrNotContains(t, strings.Join(h.rec.Calls(), "\n"), "unmount", must.Sprint("and its volumes mounted"))
	must.ErrorContains(t, r1.Destroy(), "shut down", must.Sprint("a runner shut down under live tasks keeps their handles"))
	_, ok = r1.state.handle("web")
	must.True(t, ok)
	must.True(t, HasLocalState(h.dataDir, alloc.ID))

	// The servers send the alloc back with the task states they have.
	restored := alloc.Copy()
	restored.ClientStatus = structs.AllocClientStatusRunning
	restored.TaskStates = r1.Alloc().TaskStates
	r2 := h.runner(restored)
	waitFor(t, func() bool {
		return len(eventMessages(r2.Alloc().TaskStates["web"], EventSettingUpVolumes)) == 2
	})
	waitFor(t, func() bool { return r2.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	hs2, ok := r2.state.handle("web")
	must.True(t, ok)
	must.Eq(t, hs.Pid, hs2.Pid, must.Sprint("reattached, not started again"))
	must.SliceLen(t, 1, eventMessages(r2.Alloc().TaskStates["web"], EventStarted))
	must.Eq(t, "started\n", readLog(t, r2, "web", LogStdout))
	calls := h.rec.Calls()
	must.StrHasPrefix(t, "mount data ", calls[len(calls)-1], must.Sprint("the volume hook runs again: mount is idempotent"))

	// Its process dies while no client watches: the next runner starts it.
	r2.Shutdown()
	must.NoError(t, syscall.Kill(hs.Pid, syscall.SIGKILL))
	waitFor(t, func() bool { return !exec.ProcessAlive(hs.HandleState) })
	again := alloc.Copy()
	again.TaskStates = r2.Alloc().TaskStates
	r3 := h.runner(again)
	waitFor(t, func() bool { return len(eventMessages(r3.Alloc().TaskStates["web"], EventStarted)) == 2 })
	// Started is recorded once the process runs, before it has printed.
	waitFor(t, func() bool { return readLog(t, r3, "web", LogStdout) == "started\nstarted\n" })

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r3.Update(stop)
	waitRunner(t, r3)
	must.Eq(t, structs.AllocClientStatusComplete, r3.Alloc().ClientStatus)
	_, ok = r3.state.handle("web")
	must.False(t, ok, must.Sprint("a dead task's handle is forgotten"))
}

// TestRunner_StoppedWhileClientWasDown: an alloc the servers stopped while
// no client ran it: its task still running is killed, its volume
// unmounted without a claim, and it completes.
func TestRunner_StoppedWhileClientWasDown(t *testing.T) {
	h := newHarness(t)
	alloc := testAlloc(structs.JobTypeService, shTask("web", `exec sleep 1000`))
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
	r1 := h.runner(alloc)
	waitFor(t, func() bool { return r1.Alloc().TaskStates["web"].State == structs.TaskStateRunning })
	hs, _ := r1.state.handle("web")
	r1.Shutdown()

	stopped := alloc.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	stopped.TaskStates = r1.Alloc().TaskStates
	stopped.ClientStatus = r1.Alloc().ClientStatus
	before := len(h.rec.Calls())
	r2 := h.runner(stopped)
	waitRunner(t, r2)
	must.Eq(t, structs.AllocClientStatusComplete, r2.Alloc().ClientStatus)
	must.False(t, exec.ProcessAlive(hs.HandleState))
	must.Eq(t, []string{"get data", "unmount data plugin=hostpath ext=ext-data tasks_alive=false status=running"}, h.rec.Calls()[before:])
	must.Eq(t, []string{EventKilling, EventKilled}, eventTypes(r2.Alloc().TaskStates["web"])[len(eventTypes(r2.Alloc().TaskStates["web"]))-2:])
}

func TestRestartTracker(t *testing.T) {
	now := time.Unix(1000, 0)
	fail := restartTracker{policy: structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartModeFail}}
	for i := 0; i < 2; i++ {
		d, ok, _ := fail.next(now)
		must.True(t, ok)
		must.Eq(t, time.Second, d)
	}
	_, ok, why := fail.next(now.Add(10 * time.Second))
	must.False(t, ok)
	must.Eq(t, "exceeded 2 restart attempts in 1m0s", why)
	_, ok, _ = fail.next(now.Add(2 * time.Minute))
	must.True(t, ok, must.Sprint("a new interval, new attempts"))

	delay := restartTracker{policy: structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartModeDelay}}
	_, ok, _ = delay.next(now)
	must.True(t, ok)
	d, ok, _ := delay.next(now.Add(20 * time.Second))
	must.True(t, ok)
	must.Eq(t, 40*time.Second, d, must.Sprint("waits out the interval"))
	d, ok, _ = delay.next(now.Add(61 * time.Second))
	must.True(t, ok)
	must.Eq(t, time.Second, d)

	must.Eq(t, structs.DefaultRestartPolicy(structs.JobTypeBatch, false), restartPolicy(&structs.Task{}, structs.JobTypeBatch))
	must.Eq(t, structs.DefaultRestartPolicy(structs.JobTypeService, false), restartPolicy(&structs.Task{}, structs.JobTypeService))
	plugin := &structs.Task{CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "hostpath"}}
	must.EqOp(t, time.Second, restartPolicy(plugin, structs.JobTypeSystem).Delay, must.Sprint("a plugin task restarts within a second"))
	must.EqOp(t, structs.RestartModeDelay, restartPolicy(plugin, structs.JobTypeSystem).Mode, must.Sprint("and never fails for good"))
}

func waitFor(t *testing.T, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(20*time.Second), wait.Gap(20*time.Millisecond)))
}

// TestRunner_KillSignal: a stop sends the task its kill_signal first: a
// task that ignores SIGTERM but exits on SIGINT stops at once, without
// waiting out its hour-long kill timeout.
func TestRunner_KillSignal(t *testing.T) {
	h := newHarness(t)
	task := shTask("web", `trap 'exit 0' INT; trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	task.KillSignal = "SIGINT"
	task.KillTimeout = time.Hour
	a := testAlloc(structs.JobTypeService, task)
	r := h.runner(a)
	waitFor(t, func() bool { return readLog(t, r, "web", LogStdout) == "ready\n" })
	stopped := a.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stopped)
	waitRunner(t, r)
	ts := r.Alloc().TaskStates["web"]
	must.Eq(t, []string{"sent interrupt; SIGKILL after 1h0m0s"}, eventMessages(ts, EventKilling))
	must.Eq(t, []string{"exit code 0"}, eventMessages(ts, EventKilled))
}

// TestKillSignal_EveryAllowedName: every kill_signal the servers accept is
// sent as itself, never silently as SIGTERM.
func TestKillSignal_EveryAllowedName(t *testing.T) {
	for _, name := range structs.KillSignals {
		sig := killSignal(&structs.Task{KillSignal: name})
		must.EqOp(t, name, unix.SignalName(sig), must.Sprint(name))
	}
	must.EqOp(t, syscall.SIGTERM, killSignal(&structs.Task{}))
}
