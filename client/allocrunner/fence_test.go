package allocrunner

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

func TestRunner_Fenceable(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name string
		vols map[string]*structs.VolumeRequest
		opt  *structs.DisconnectStrategy
		want bool
	}{
		{"no volumes", nil, nil, false},
		{"reader", map[string]*structs.VolumeRequest{"logs": csiVolume("logs", true)}, nil, false},
		{"writer", map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}, nil, true},
		{"writer with an empty disconnect block", map[string]*structs.VolumeRequest{"data": csiVolume("data", false)},
			&structs.DisconnectStrategy{}, true},
		{"writer opting out", map[string]*structs.VolumeRequest{"data": csiVolume("data", false)},
			&structs.DisconnectStrategy{StopOnClient: new(false)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			alloc := testAlloc(structs.JobTypeService, shTask("web", "sleep 1"))
			alloc.Job.TaskGroups[0].Volumes = c.vols
			alloc.Job.TaskGroups[0].Disconnect = c.opt
			r, err := New(Config{Alloc: alloc, NodeID: "node-1", DataDir: h.dataDir, Servers: h.servers, Volumes: h.mounter,
				ExternalNodeID: func(string) (string, bool) { return "", false }})
			must.NoError(t, err)
			must.EqOp(t, c.want, r.Fenceable())
		})
	}
}

// TestRunner_Fence_KillsWithinItsDeadline: a writer that ignores SIGTERM,
// with a kill timeout far longer than the fence allows, is killed at the
// fence's deadline, then its volume is unmounted, and the alloc ends
// lost with the fence's reason (the servers stop it and may replace it).
func TestRunner_Fence_KillsWithinItsDeadline(t *testing.T) {
	h := newHarness(t)
	r := stubbornRunner(t, h, false)

	r.Fence("fenced: no server for 5s", 200*time.Millisecond)
	r.Fence("fenced again", time.Hour) // does nothing more
	waitRunner(t, r)
	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusLost, a.ClientStatus)
	must.Eq(t, "fenced: no server for 5s", a.ClientDescription)
	ts := a.TaskStates["web"]
	must.Eq(t, []string{EventReceived, EventSettingUpVolumes, EventStarted, EventFenced, EventKilling, EventKilled}, eventTypes(ts))
	must.Eq(t, []string{"killed by signal killed"}, eventMessages(ts, EventKilled))
	calls := h.rec.Calls()
	must.StrContains(t, calls[len(calls)-1], "unmount data plugin=hostpath ext=ext-data tasks_alive=false")
}

// TestRunner_Fence_BoundsAStopUnderWay: a stop the servers asked for is
// waiting out a long kill timeout when the fence comes: the task is killed
// at the fence's deadline, and the alloc keeps the stop's outcome.
func TestRunner_Fence_BoundsAStopUnderWay(t *testing.T) {
	h := newHarness(t)
	r := stubbornRunner(t, h, false)

	r.Stop()
	waitFor(t, func() bool { return len(eventMessages(r.Alloc().TaskStates["web"], EventKilling)) > 0 })
	r.Fence("fenced: no server for 5s", 100*time.Millisecond)
	waitRunner(t, r)
	a := r.Alloc()
	must.Eq(t, structs.AllocClientStatusComplete, a.ClientStatus)
	must.Eq(t, []string{"killed by signal killed"}, eventMessages(a.TaskStates["web"], EventKilled))
}

// TestFenceOrphan: a client restarted while cut off fences the allocs it
// left running before it has runners for them: a writer's task is killed
// (within the deadline, whatever its kill_timeout) and its handle
// forgotten; a reader's is left alone.
func TestFenceOrphan(t *testing.T) {
	h := newHarness(t)
	start := func(readOnly bool) (*Runner, exec.HandleState) {
		r := stubbornRunner(t, h, readOnly)
		var hs savedHandle
		waitFor(t, func() bool {
			var ok bool
			hs, ok = r.state.handle("web") // recorded just after the start
			return ok
		})
		r.Shutdown()             // the client stops: the task runs on
		return r, hs.HandleState // the host's PID of the task (its namespace's init)
	}
	writer, writerPid := start(false)
	reader, readerPid := start(true)
	local, err := LocalAllocs(h.dataDir)
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{writer.ID(), reader.ID()}, local)

	killed, err := FenceOrphan(t.Context(), h.dataDir, writer.ID(), 100*time.Millisecond, nil)
	must.NoError(t, err)
	must.True(t, killed)
	must.False(t, pidAlive(writerPid))
	_, ok := mustState(t, h.dataDir, writer.ID()).handle("web")
	must.False(t, ok, must.Sprint("the killed task's handle is forgotten"))

	killed, err = FenceOrphan(t.Context(), h.dataDir, reader.ID(), 100*time.Millisecond, nil)
	must.NoError(t, err)
	must.False(t, killed)
	must.True(t, pidAlive(readerPid), must.Sprint("a reader is not fenced"))
	_ = syscall.Kill(readerPid.Pid, syscall.SIGKILL)
}

func pidAlive(hs exec.HandleState) bool { return exec.ProcessAlive(hs) }

func mustState(t *testing.T, dataDir, allocID string) *stateStore {
	t.Helper()
	st, err := openState(stateFile(dataDir, allocID))
	must.NoError(t, err)
	return st
}

// stubbornRunner runs a task that ignores SIGTERM, with an hour's kill
// timeout, on volume "data" (read-only or written), until it is ready.
func stubbornRunner(t *testing.T, h *harness, readOnly bool) *Runner {
	t.Helper()
	task := shTask("web", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	task.KillTimeout = time.Hour
	alloc := testAlloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", readOnly)}
	r := h.runner(alloc)
	waitFor(t, func() bool { return strings.Contains(readLog(t, r, "web", LogStdout), "ready") })
	return r
}
