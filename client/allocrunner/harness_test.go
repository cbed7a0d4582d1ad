package allocrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func TestMain(m *testing.M) {
	exec.Init()
	volumeRetry = backoff.Policy{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond, MaxAttempts: 3} // three tries, soon over
	code := m.Run()
	dockertest.Cleanup()
	os.Exit(code)
}

// recorder is one ordered log of what the fakes were asked and what the
// runner reported.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	updates []*structs.Allocation
}

func (r *recorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) onUpdate(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, a)
}

// statuses lists the client statuses reported, each change once.
func (r *recorder) statuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		if len(out) == 0 || out[len(out)-1] != u.ClientStatus {
			out = append(out, u.ClientStatus)
		}
	}
	return out
}

func (r *recorder) lastStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.updates) == 0 {
		return ""
	}
	return r.updates[len(r.updates)-1].ClientStatus
}

// fakeServers answers CSIVolume.Get and CSIVolume.Publish: the servers
// are not what these tests are about.
type fakeServers struct {
	rec      *recorder
	missing  map[string]bool
	claimErr error
	// readClaims are the volumes whose reserved claim is a read claim
	// (the others' are write claims).
	readClaims map[string]bool
	// volume, if set, answers for every volume (else testVolume).
	volume         func(id string) *structs.CSIVolume
	publishContext map[string]string
}

func (f *fakeServers) lookup(id string) *structs.CSIVolume {
	if f.volume != nil {
		return f.volume(id)
	}
	return testVolume(id)
}

var _ RPCer = (*fakeServers)(nil)

func (f *fakeServers) RPC(_ context.Context, method string, args, reply any) error {
	switch method {
	case "CSIVolume.Get":
		req := args.(*structs.CSIVolumeGetRequest)
		f.rec.record("get %s", req.ID)
		if !f.missing[req.ID] {
			reply.(*structs.CSIVolumeGetResponse).Volume = f.lookup(req.ID)
		}
		return nil
	case "CSIVolume.Publish":
		req := args.(*structs.CSIVolumePublishRequest)
		f.rec.record("publish %s alloc=%s node=%s", req.VolumeID, req.AllocationID, req.NodeID)
		if f.claimErr != nil {
			return f.claimErr
		}
		resp := reply.(*structs.CSIVolumeClaimResponse)
		resp.Volume = f.lookup(req.VolumeID)
		resp.Claim = &structs.CSIVolumeClaim{AllocID: req.AllocationID, NodeID: req.NodeID, Mode: structs.CSIVolumeClaimWrite,
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
		if f.readClaims[req.VolumeID] {
			resp.Claim.Mode = structs.CSIVolumeClaimRead
		}
		resp.PublishContext = map[string]string{"device": "/dev/fake"}
		if f.publishContext != nil {
			resp.PublishContext = f.publishContext
		}
		return nil
	}
	return fmt.Errorf("fake servers: no method %s", method)
}

func testVolume(id string) *structs.CSIVolume {
	return &structs.CSIVolume{ID: id, PluginID: "hostpath", ExternalID: "ext-" + id,
		Context: map[string]string{"k": "v"}, MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{structs.Redacted}}}
}

// fakeVolumes publishes each volume at a temp dir holding a file "hello",
// and records at each call whether the alloc's tasks had started (their
// stdout log exists) or are all dead.
type fakeVolumes struct {
	rec      *recorder
	root     string
	allocDir string
	tasks    []string
	mountErr error
	// failMounts is how many mounts fail (with mountErr) before they work.
	failMounts int
	requests   []*volumemanager.MountRequest
}

var _ VolumeMounter = (*fakeVolumes)(nil)

func (f *fakeVolumes) MountVolume(_ context.Context, req *volumemanager.MountRequest) (*volumemanager.MountResult, error) {
	f.rec.record("mount %s plugin=%s ext=%s tasks_started=%v", req.VolumeID, req.PluginID, req.ExternalVolumeID, f.anyStarted())
	f.rec.mu.Lock()
	f.requests = append(f.requests, req)
	f.rec.mu.Unlock()
	if f.mountErr != nil && f.failMounts != 0 {
		f.failMounts--
		return nil, f.mountErr
	}
	dir := filepath.Join(f.root, req.VolumeID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // as berth-hostpath makes them: tasks run as nobody
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("hello from "+req.VolumeID+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &volumemanager.MountResult{HostPath: dir}, nil
}

func (f *fakeVolumes) UnmountVolume(_ context.Context, allocID, volumeID, pluginID, externalVolumeID string) error {
	f.rec.record("unmount %s plugin=%s ext=%s tasks_alive=%v status=%s", volumeID, pluginID, externalVolumeID,
		f.anyAlive(), f.rec.lastStatus())
	return nil
}

func (f *fakeVolumes) anyStarted() bool {
	for _, t := range f.tasks {
		if _, err := os.Stat(LogPath(f.allocDir, t, LogStdout)); err == nil {
			return true
		}
	}
	return false
}

// anyAlive looks for a process of the alloc's tasks: one running in the
// alloc dir (exec.ProcessesUnder; the pid a task script writes is its
// PID namespace's, not the host's).
func (f *fakeVolumes) anyAlive() bool {
	return len(exec.ProcessesUnder(f.allocDir)) > 0
}

type harness struct {
	t       *testing.T
	rec     *recorder
	servers *fakeServers
	volumes *fakeVolumes
	mounter VolumeMounter // the runners' volume mounter: volumes unless a test sets it
	dataDir string
	extNode map[string]string
	plugins PluginRegistry // nil unless a test runs plugin tasks
	// allowRoot is the client's allow_root_tasks: on, as plugin tasks
	// and tasks that mount need it; their other tasks run as nobody.
	allowRoot bool
	docker    *docker.Driver // nil unless a test runs docker tasks
	cores     *Cores         // nil unless a test hands out cores
}

func newHarness(t *testing.T) *harness {
	rec := &recorder{}
	h := &harness{
		t:       t,
		rec:     rec,
		servers: &fakeServers{rec: rec, missing: map[string]bool{}},
		volumes: &fakeVolumes{rec: rec, root: t.TempDir()},
		dataDir: t.TempDir(),
		extNode: map[string]string{"hostpath": "ext-node-1"},

		allowRoot: true,
	}
	h.mounter = h.volumes
	return h
}

// runner builds a runner for the alloc and starts Run; the test ends with
// it stopped.
func (h *harness) runner(alloc *structs.Allocation) *Runner {
	h.t.Helper()
	h.volumes.allocDir = AllocDir(h.dataDir, alloc.ID)
	h.volumes.tasks = nil
	if tg := alloc.LookupTaskGroup(); tg != nil {
		for _, t := range tg.Tasks {
			h.volumes.tasks = append(h.volumes.tasks, t.Name)
		}
	}
	r, err := New(Config{
		Alloc:   alloc,
		NodeID:  "node-1",
		DataDir: h.dataDir,
		Servers: h.servers,
		Volumes: h.mounter,
		ExternalNodeID: func(id string) (string, bool) {
			v, ok := h.extNode[id]
			return v, ok
		},
		OnUpdate:       h.rec.onUpdate,
		ClaimTimeout:   time.Second,
		Plugins:        h.plugins,
		AllowRootTasks: h.allowRoot,
		Docker:         h.docker,
		Cores:          h.cores,
		CoreMHz:        1000,

		PluginProbeInterval: 100 * time.Millisecond,
		Logger:              testlog.Logger(h.t, "allocrunner"),
	})
	must.NoError(h.t, err)
	go r.Run()
	h.t.Cleanup(func() {
		stopped := alloc.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		r.Update(stopped)
		waitRunner(h.t, r)
	})
	return r
}

func waitRunner(t *testing.T, r *Runner) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("alloc %s did not finish; last view %+v", r.ID(), r.Alloc())
	}
}

func newAllocID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func testAlloc(jobType string, tasks ...*structs.Task) *structs.Allocation {
	return &structs.Allocation{
		ID: newAllocID(), Namespace: structs.DefaultNamespace, Name: "job.web[0]", JobID: "job", TaskGroup: "web",
		NodeID: "node-1", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		Job: &structs.Job{ID: "job", Type: jobType, TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, Tasks: tasks}}},
	}
}

// shTask is a task running sh -c script that writes its pid to local/pid
// first; it is not restarted unless the test says so.
func shTask(name, script string) *structs.Task {
	return &structs.Task{
		Name:        name,
		Driver:      "exec",
		Config:      map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo $$ > local/pid; " + script}},
		Restart:     &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail},
		KillTimeout: 5 * time.Second,
	}
}

func eventTypes(ts *structs.TaskState) []string {
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type)
	}
	return out
}

func eventMessages(ts *structs.TaskState, typ string) []string {
	var out []string
	for _, e := range ts.Events {
		if e.Type == typ {
			out = append(out, e.Message)
		}
	}
	return out
}

func readLog(t *testing.T, r *Runner, task, kind string) string {
	t.Helper()
	b, err := os.ReadFile(LogPath(r.allocDir, task, kind))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	must.NoError(t, err)
	return string(b)
}

// openTempDir is a t.TempDir that every user can search (t.TempDir's
// parent is 0700): a task that runs as nobody reaches a mount destination
// there by its absolute path.
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		must.NoError(t, os.Chmod(d, 0o755))
	}
	return dir
}

func needRoot(t *testing.T) {
	t.Helper()
	testlog.NeedRoot(t, "bind mounts in a mount namespace")
}
