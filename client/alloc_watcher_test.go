package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

// fakeServers answers what a client calls: registration and heartbeats,
// the blocking list of the node's allocs, and the allocs' updates, which
// it merges into the list as the servers do. It stands in for the servers
// while their scheduler is written; it is not what these tests are about.
type fakeServers struct {
	addr string

	mu          sync.Mutex
	index       uint64
	allocs      map[string]*structs.Allocation
	changed     chan struct{} // closed on every change
	closing     chan struct{} // closed when the test ends: blocked queries return
	updates     int
	failUpdates int // the next updates fail as unavailable
	// onStatus, if set, sees each node status the client reports.
	onStatus func(status string)
	// beforeList, if set, holds the node's alloc list until it is closed.
	beforeList chan struct{}
	// node is the node as the client last registered it.
	node *structs.Node
}

func (f *fakeServers) status(s string) {
	f.mu.Lock()
	fn := f.onStatus
	f.mu.Unlock()
	if fn != nil {
		fn(s)
	}
}

func startFakeServers(t *testing.T) *fakeServers {
	t.Helper()
	f := &fakeServers{index: 1, allocs: map[string]*structs.Allocation{}, changed: make(chan struct{}), closing: make(chan struct{})}
	logger := testlog.Logger(t, "fake-servers")
	srv := rpc.NewServer(logger)
	must.NoError(t, srv.Register("Node", &fakeNodeEndpoint{f: f}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	f.addr = l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	mux := rpc.NewMux(logger, l)
	mux.Handle(rpc.TypeMultiplex, func(c net.Conn) { srv.ServeMultiplex(ctx, c, nil) })
	served := make(chan error, 1)
	go func() { served <- mux.Serve(ctx) }()
	t.Cleanup(func() {
		close(f.closing)
		cancel()
		<-served
		srv.Shutdown()
	})
	return f
}

// set places or changes an alloc.
func (f *fakeServers) set(a *structs.Allocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocs[a.ID] = a.Copy()
	f.bumpLocked()
}

func (f *fakeServers) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.allocs, id)
	f.bumpLocked()
}

func (f *fakeServers) bumpLocked() {
	f.index++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeServers) alloc(id string) *structs.Allocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allocs[id].Copy()
}

type fakeNodeEndpoint struct{ f *fakeServers }

func (e *fakeNodeEndpoint) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	e.f.mu.Lock()
	e.f.node = args.Node.Copy()
	e.f.mu.Unlock()
	e.f.status(args.Node.Status)
	reply.HeartbeatTTL = 10 * time.Second
	return nil
}

func (e *fakeNodeEndpoint) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	e.f.status(args.Status)
	reply.HeartbeatTTL = 10 * time.Second
	return nil
}

func (e *fakeNodeEndpoint) UpdateFingerprint(_ *structs.NodeFingerprintRequest, _ *structs.NodeUpdateResponse) error {
	return nil
}

func (e *fakeNodeEndpoint) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	f := e.f
	f.mu.Lock()
	hold := f.beforeList
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	timeout := time.NewTimer(args.MaxQueryTime)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		if f.index > args.MinQueryIndex {
			reply.Index = f.index
			reply.Allocs = []*structs.Allocation{}
			for _, a := range f.allocs {
				reply.Allocs = append(reply.Allocs, a.Copy())
			}
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-timeout.C:
			reply.Index = args.MinQueryIndex
			return nil
		case <-f.closing:
			return structs.NewError(structs.CodeUnavailable, "shutting down")
		}
	}
}

func (e *fakeNodeEndpoint) UpdateAlloc(args *structs.AllocUpdateRequest, _ *structs.GenericResponse) error {
	f := e.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failUpdates > 0 {
		f.failUpdates--
		return structs.NewError(structs.CodeUnavailable, "no cluster leader")
	}
	f.updates++
	for _, u := range args.Allocs {
		if a := f.allocs[u.ID]; a != nil {
			a.ClientStatus, a.ClientDescription, a.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
		}
	}
	f.bumpLocked()
	return nil
}

// startClient runs a client against the fake servers until the test ends
// or the returned stop is called.
func startClient(t *testing.T, f *fakeServers, dataDir string, edit func(*Config)) (*Client, func()) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = dataDir
	cfg.Servers = []string{f.addr}
	cfg.UpdateCoalesce = 20 * time.Millisecond
	cfg.Logger = testlog.Logger(t, "client")
	if edit != nil {
		edit(cfg)
	}
	c, err := New(cfg)
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return c, stop
}

func watcherAlloc(nodeID, jobType, script string) *structs.Allocation {
	return &structs.Allocation{
		ID: newUUID(), Namespace: structs.DefaultNamespace, Name: "job.web[0]", JobID: "job", TaskGroup: "web",
		NodeID: nodeID, DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		Job: &structs.Job{ID: "job", Type: jobType, TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, Tasks: []*structs.Task{{
			Name: "web", Driver: "exec",
			Config:      map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo $$ > local/pid; " + script}},
			Restart:     &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Mode: structs.RestartModeFail},
			KillTimeout: 5 * time.Second,
		}}}}},
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(20*time.Second), wait.Gap(20*time.Millisecond)),
		must.Sprint(what))
}

func (f *fakeServers) statusIs(id, status string) func() bool {
	return func() bool {
		a := f.alloc(id)
		return a != nil && a.ClientStatus == status
	}
}

// TestAllocWatcher_RunStopRemove: the client runs what the servers place,
// reports it (retrying while the servers are unavailable), stops what they
// stop, and removes what they forget.
func TestAllocWatcher_RunStopRemove(t *testing.T) {
	f := startFakeServers(t)
	f.failUpdates = 2
	dataDir := t.TempDir()
	c, _ := startClient(t, f, dataDir, nil)

	batch := watcherAlloc(c.NodeID(), structs.JobTypeBatch, `echo hello from batch`)
	service := watcherAlloc(c.NodeID(), structs.JobTypeService, `echo ready; trap 'echo bye; exit 0' TERM; while :; do sleep 0.05; done`)
	f.set(batch)
	f.set(service)
	waitUntil(t, "the batch alloc completes", f.statusIs(batch.ID, structs.AllocClientStatusComplete))
	waitUntil(t, "the service alloc runs", f.statusIs(service.ID, structs.AllocClientStatusRunning))
	ts := f.alloc(batch.ID).TaskStates["web"]
	must.Eq(t, structs.TaskStateDead, ts.State)
	must.Eq(t, "exit code 0", ts.Events[len(ts.Events)-1].Message)

	var logs structs.ClientAllocLogsResponse
	must.NoError(t, callWire(t, c, "ClientAllocations.Logs", &structs.ClientAllocLogsRequest{AllocID: batch.ID, Task: "web"}, &logs))
	must.Eq(t, "hello from batch\n", string(logs.Data))

	stop := f.alloc(service.ID)
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	f.set(stop)
	waitUntil(t, "the stopped alloc completes", f.statusIs(service.ID, structs.AllocClientStatusComplete))
	events := f.alloc(service.ID).TaskStates["web"].Events
	must.Eq(t, allocrunner.EventKilled, events[len(events)-1].Type)
	must.Eq(t, "exit code 0", events[len(events)-1].Message)
	must.NoError(t, callWire(t, c, "ClientAllocations.Logs", &structs.ClientAllocLogsRequest{AllocID: service.ID, Task: "web"}, &logs))
	must.Eq(t, "ready\nbye\n", string(logs.Data))

	f.remove(batch.ID)
	f.remove(service.ID)
	waitUntil(t, "forgotten allocs are removed", func() bool {
		_, err1 := os.Stat(allocrunner.AllocDir(dataDir, batch.ID))
		_, err2 := os.Stat(allocrunner.AllocDir(dataDir, service.ID))
		return os.IsNotExist(err1) && os.IsNotExist(err2)
	})
	must.Nil(t, c.allocs.runner(batch.ID))
}

// TestAllocWatcher_ClientRestart: a client that stops leaves its tasks
// running; the next one on the same data dir reattaches. With
// StopAllocsOnShutdown the tasks are stopped with the client.
func TestAllocWatcher_ClientRestart(t *testing.T) {
	f, dataDir, a, pid := leftRunning(t)
	c2, stop2 := startClient(t, f, dataDir, func(cfg *Config) { cfg.StopAllocsOnShutdown = true })
	waitUntil(t, "the new client runs the alloc", func() bool { return c2.allocs.runner(a.ID) != nil })
	waitUntil(t, "and reports it running", func() bool {
		r := c2.allocs.runner(a.ID)
		return r.Alloc().ClientStatus == structs.AllocClientStatusRunning
	})
	started := 0
	for _, e := range c2.allocs.runner(a.ID).Alloc().TaskStates["web"].Events {
		if e.Type == allocrunner.EventStarted {
			started++
		}
	}
	must.Eq(t, 1, started, must.Sprint("reattached, not started again"))
	must.Eq(t, pid, readPid(t, dataDir, a.ID))

	stop2()
	waitUntil(t, "StopAllocsOnShutdown kills the task", func() bool { return !processExists(pid) })
}

// TestAllocWatcher_RestartReportsReadyAfterCleanup: a client that starts
// with an alloc of its past still running, which the servers have since
// marked lost, reports itself initializing until it has killed that alloc's
// task; only then ready.
func TestAllocWatcher_RestartReportsReadyAfterCleanup(t *testing.T) {
	f, dataDir, a, pid := leftRunning(t)

	lost := f.alloc(a.ID)
	lost.ClientStatus, lost.DesiredStatus = structs.AllocClientStatusLost, structs.AllocDesiredStatusStop
	f.set(lost)
	type report struct {
		status string
		alive  bool // the lost task, when the status was reported
	}
	var (
		mu      sync.Mutex
		reports []report
	)
	registered := make(chan struct{})
	f.mu.Lock()
	f.onStatus = func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(reports) == 0 {
			close(registered)
		}
		reports = append(reports, report{s, processExists(pid)})
	}
	// The servers' list comes after the registration: the lost task is
	// still running when the client first reports its status.
	f.beforeList = registered
	f.mu.Unlock()
	_, stop2 := startClient(t, f, dataDir, nil)
	defer stop2()
	waitUntil(t, "the client ready", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reports) > 0 && reports[len(reports)-1].status == structs.NodeStatusReady
	})
	mu.Lock()
	defer mu.Unlock()
	must.Eq(t, report{structs.NodeStatusInit, true}, reports[0], must.Sprint("registered initializing while the lost task ran"))
	for _, r := range reports {
		must.False(t, r.status == structs.NodeStatusReady && r.alive, must.Sprintf("reported ready while the lost task ran: %v", reports))
	}
}

// leftRunning runs an alloc on a client that then stops: its task runs on
// (it outlives the client) for the next client of dataDir to find.
func leftRunning(t *testing.T) (f *fakeServers, dataDir string, a *structs.Allocation, pid string) {
	t.Helper()
	f = startFakeServers(t)
	dataDir = t.TempDir()
	c1, stop1 := startClient(t, f, dataDir, nil)
	a = watcherAlloc(c1.NodeID(), structs.JobTypeService, `echo ready; exec sleep 1000`)
	f.set(a)
	waitUntil(t, "the alloc runs", f.statusIs(a.ID, structs.AllocClientStatusRunning))
	pid = readPid(t, dataDir, a.ID)
	stop1()
	must.True(t, processExists(pid), must.Sprint("the task outlives the client"))
	return f, dataDir, a, pid
}

// readPid is the host's PID of the alloc's task "web": the process in its
// task dir whose parent is not (as root, its PID namespace's init; the pid
// the task itself sees is the namespace's).
func readPid(t *testing.T, dataDir, allocID string) string {
	t.Helper()
	dir := allocrunner.TaskDir(allocrunner.AllocDir(dataDir, allocID), "web")
	var pid string
	waitUntil(t, "the task runs in "+dir, func() bool {
		pids := exec.ProcessesUnder(dir)
		in := map[int]bool{}
		for _, p := range pids {
			in[p] = true
		}
		for _, p := range pids {
			if !in[parentPid(p)] {
				pid = strconv.Itoa(p)
				return true
			}
		}
		return false
	})
	return pid
}

// parentPid is pid's parent, 0 when it cannot be read.
func parentPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func processExists(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func TestClientAllocations_Logs(t *testing.T) {
	f := startFakeServers(t)
	dataDir := t.TempDir()
	c, _ := startClient(t, f, dataDir, nil)
	a := watcherAlloc(c.NodeID(), structs.JobTypeBatch, `printf 0123456789; printf oops >&2`)
	f.set(a)
	waitUntil(t, "the alloc completes", f.statusIs(a.ID, structs.AllocClientStatusComplete))

	read := func(req *structs.ClientAllocLogsRequest) (*structs.ClientAllocLogsResponse, error) {
		var resp structs.ClientAllocLogsResponse
		err := callWire(t, c, "ClientAllocations.Logs", req, &resp)
		return &resp, err
	}
	resp, err := read(&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Offset: 3, Limit: 4})
	must.NoError(t, err)
	must.Eq(t, "3456", string(resp.Data))
	must.Eq(t, int64(10), resp.Size)
	resp, err = read(&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Offset: 8})
	must.NoError(t, err)
	must.Eq(t, "89", string(resp.Data))
	resp, err = read(&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Offset: 20})
	must.NoError(t, err)
	must.Eq(t, "", string(resp.Data))
	resp, err = read(&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Kind: "stderr"})
	must.NoError(t, err)
	must.Eq(t, "oops", string(resp.Data))

	cases := []struct {
		req  *structs.ClientAllocLogsRequest
		code error
		msg  string
	}{
		{&structs.ClientAllocLogsRequest{AllocID: "nope", Task: "web"}, structs.ErrNotFound,
			"alloc nope is not on node " + c.NodeID()},
		{&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "db"}, structs.ErrNotFound,
			"alloc " + a.ID + ` has no task "db"`},
		{&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Kind: "stdin"}, structs.ErrBadRequest,
			"alloc " + a.ID + ` task "web": log kind "stdin" is not stdout or stderr`},
		{&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "../../client"}, structs.ErrBadRequest,
			"alloc " + a.ID + `: task name "../../client" is not usable as a directory name`},
		{&structs.ClientAllocLogsRequest{AllocID: "..", Task: "web"}, structs.ErrBadRequest,
			`alloc ID ".." is not usable as a directory name`},
		{&structs.ClientAllocLogsRequest{AllocID: a.ID, Task: "web", Offset: -1}, structs.ErrBadRequest,
			"alloc " + a.ID + ` task "web": offset and limit must not be negative`},
	}
	for _, tc := range cases {
		_, err := read(tc.req)
		must.ErrorIs(t, err, tc.code)
		must.EqError(t, err, tc.msg)
	}
}

// TestAllocWatcher_PluginOutlivesWorkloadsStoppedEarlier: a workload is
// purged (the servers' list no longer names it; it ignores SIGTERM and
// dies at its kill_timeout), then, in a later sync, a plugin is stopped: the plugin's task is stopped
// only once the workload's is dead, so that its volumes can be unmounted
// while the plugin runs.
func TestAllocWatcher_PluginOutlivesWorkloadsStoppedEarlier(t *testing.T) {
	testlog.NeedRoot(t, "a plugin task runs in a mount namespace with its plugin dir bound")
	f := startFakeServers(t)
	dataDir := csitest.SocketDir(t)
	t.Cleanup(func() { _, _ = exec.DetachMountsUnder(dataDir, nil) })
	c, _ := startClient(t, f, dataDir, func(c *Config) { c.AllowRootTasks = true }) // the plugin task runs as root

	plugin := watcherAlloc(c.NodeID(), structs.JobTypeSystem, "")
	plugin.JobID, plugin.Job.ID = "plugin", "plugin"
	plugin.Job.TaskGroups[0].Tasks[0] = &structs.Task{Name: "web", Driver: "exec",
		Config:      map[string]any{"command": csitest.HostpathBinary(t), "args": []any{"-root", t.TempDir(), "-node-id", "n1"}},
		Restart:     &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Mode: structs.RestartModeFail},
		KillTimeout: 2 * time.Second,
		CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith,
			MountDir: "/csi", HealthTimeout: int64(20 * time.Second)}}
	workload := watcherAlloc(c.NodeID(), structs.JobTypeService, `trap '' TERM; while :; do sleep 0.05; done`)
	workload.Job.TaskGroups[0].Tasks[0].KillTimeout = 2 * time.Second
	f.set(plugin)
	f.set(workload)
	waitUntil(t, "the plugin runs", f.statusIs(plugin.ID, structs.AllocClientStatusRunning))
	waitUntil(t, "the workload runs", f.statusIs(workload.ID, structs.AllocClientStatusRunning))

	stop := func(id string) {
		a := f.alloc(id)
		a.DesiredStatus = structs.AllocDesiredStatusStop
		f.set(a)
	}
	// The workload is purged: the next lists no longer name it.
	wr := c.allocs.runner(workload.ID)
	must.NotNil(t, wr)
	f.remove(workload.ID)
	waitUntil(t, "the workload is being killed", func() bool { return eventAt(wr.Alloc(), allocrunner.EventKilling) != nil })
	stop(plugin.ID) // a later sync
	waitUntil(t, "the plugin is stopped", f.statusIs(plugin.ID, structs.AllocClientStatusComplete))
	<-wr.Done()

	killed := eventAt(wr.Alloc(), allocrunner.EventKilled)
	pluginKilling := eventAt(f.alloc(plugin.ID), allocrunner.EventKilling)
	must.NotNil(t, killed)
	must.NotNil(t, pluginKilling)
	must.False(t, pluginKilling.Time.Before(killed.Time),
		must.Sprintf("the plugin was stopped at %s, before the workload died at %s", pluginKilling.Time, killed.Time))
}

// eventAt is the alloc's first task event of type typ, or nil.
func eventAt(a *structs.Allocation, typ string) *structs.TaskEvent {
	if a == nil {
		return nil
	}
	for _, ts := range a.TaskStates {
		for _, e := range ts.Events {
			if e.Type == typ {
				return e
			}
		}
	}
	return nil
}
