package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// pluginHarness is a harness whose data dir is short enough for the
// plugin's socket, with a real plugin registry.
func pluginHarness(t *testing.T) (*harness, *dynamicplugins.Registry) {
	h := newHarness(t)
	h.dataDir = csitest.SocketDir(t)
	t.Cleanup(func() { _, _ = exec.DetachMountsUnder(h.dataDir, nil) }) // the shared plugin dir, and anything a failure left
	reg := dynamicplugins.New(testlog.Logger(t, "registry"))
	h.plugins = reg
	return h, reg
}

func pluginTaskSpec(name string, cfg map[string]any) *structs.Task {
	return &structs.Task{
		Name:        name,
		Driver:      "exec",
		Config:      cfg,
		Restart:     &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail},
		KillTimeout: 2 * time.Second,
		CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith,
			MountDir: "/csi", HealthTimeout: int64(20 * time.Second)},
	}
}

// TestRunner_PluginTask_Hostpath runs berth-hostpath as a plugin task:
// it finds its socket through CSI_ENDPOINT inside its mount, registers
// once healthy, stages and publishes at the paths inside its mount while
// the host sees the mounts, and deregisters when it stops, leaving
// nothing mounted.
func TestRunner_PluginTask_Hostpath(t *testing.T) {
	needRoot(t)
	h, reg := pluginHarness(t)
	bin := csitest.HostpathBinary(t)
	task := pluginTaskSpec("plugin", map[string]any{"command": bin,
		"args": []any{"-root", t.TempDir(), "-node-id", "node-a"}})
	alloc := testAlloc(structs.JobTypeSystem, task)
	r := h.runner(alloc)

	var info *dynamicplugins.PluginInfo
	waitFor(t, func() bool {
		p, ok := reg.Get("hostpath")
		info = p
		return ok
	})
	hostDir := volumemanager.PluginHostDir(h.dataDir, "hostpath")
	must.Eq(t, &dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith,
		Socket: filepath.Join(hostDir, "csi.sock"), AllocID: alloc.ID, Source: dynamicplugins.SourceTask,
		MountDir: "/csi"}, info)
	waitFor(t, func() bool { return r.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	ts := r.Alloc().TaskStates["plugin"]
	must.SliceContains(t, eventMessages(ts, EventPluginHealthy),
		`plugin "hostpath" is healthy and registered on this node (monolith)`)

	// The volume manager sends the plugin the paths inside its mount; the
	// mounts it makes there reach the host through the shared bind.
	ctx := context.Background()
	v, pc := createPublished(t, info.Socket, "node-a")
	m, err := volumemanager.New(volumemanager.Config{DataDir: h.dataDir, Registry: reg, Logger: testlog.Logger(t, "volumes")})
	must.NoError(t, err)
	user := newAllocID()
	res, err := m.MountVolume(ctx, &volumemanager.MountRequest{AllocID: user, VolumeID: "data",
		ExternalVolumeID: v.ExternalVolumeID, PluginID: "hostpath", AccessMode: writerCap.AccessMode,
		AttachmentMode: writerCap.AttachmentMode, VolumeContext: v.VolumeContext, PublishContext: pc})
	must.NoError(t, err)
	must.Eq(t, filepath.Join(hostDir, "per-alloc", user, "data"), res.HostPath)
	mps, err := exec.MountsUnder(hostDir)
	must.NoError(t, err)
	must.SliceContains(t, mps, res.HostPath, must.Sprint("the plugin's publish mount shows on the host"))
	must.NoError(t, os.WriteFile(filepath.Join(res.HostPath, "hello"), []byte("hi\n"), 0o644))
	must.NoError(t, m.UnmountVolume(ctx, user, "data", "hostpath", v.ExternalVolumeID))

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stop)
	waitRunner(t, r)
	_, ok := reg.Get("hostpath")
	must.False(t, ok, must.Sprint("the plugin is deregistered when its task stops"))
	must.SliceContains(t, eventMessages(r.Alloc().TaskStates["plugin"], EventPluginUnhealthy),
		`plugin "hostpath" stopped and was deregistered from this node`)
	mps, err = exec.MountsUnder(h.dataDir)
	must.NoError(t, err)
	must.Eq(t, []string{hostDir}, mps, must.Sprint("only the plugin's shared dir stays mounted, with nothing under it"))
	must.NoError(t, r.Destroy())
}

// TestRunner_PluginTask_NeverHealthy: a plugin task that never opens its
// socket is stopped at its health timeout, restarted per its policy, and
// then fails with an event that says why; it is never registered.
func TestRunner_PluginTask_NeverHealthy(t *testing.T) {
	needRoot(t)
	h, reg := pluginHarness(t)
	task := pluginTaskSpec("plugin", map[string]any{"command": "/bin/sleep", "args": []any{"1000"}})
	task.CSIPluginConfig.HealthTimeout = int64(300 * time.Millisecond)
	alloc := testAlloc(structs.JobTypeSystem, task)
	r := h.runner(alloc)
	waitRunner(t, r)

	got := r.Alloc()
	must.Eq(t, structs.AllocClientStatusFailed, got.ClientStatus)
	ts := got.TaskStates["plugin"]
	must.True(t, ts.Failed)
	must.Eq(t, 1, ts.Restarts)
	unhealthy := eventMessages(ts, EventPluginUnhealthy)
	must.Len(t, 2, unhealthy, must.Sprintf("one per start: %v", eventTypes(ts)))
	must.StrContains(t, unhealthy[0], `plugin "hostpath" did not become healthy within 300ms`)
	must.StrContains(t, unhealthy[0], "csi.sock does not exist")
	must.True(t, slices.Contains(eventTypes(ts), EventNotRestarting))
	_, ok := reg.Get("hostpath")
	must.False(t, ok)
	mps, err := exec.MountsUnder(h.dataDir)
	must.NoError(t, err)
	must.Eq(t, []string{volumemanager.PluginHostDir(h.dataDir, "hostpath")}, mps, must.Sprint("only the plugin's shared dir"))
}

// TestRunner_PluginTask_Refusals: what the runner refuses before starting
// a plugin task.
func TestRunner_PluginTask_Refusals(t *testing.T) {
	h := newHarness(t) // no registry
	task := pluginTaskSpec("plugin", map[string]any{"command": "/bin/true"})
	r := h.runner(testAlloc(structs.JobTypeSystem, task))
	waitRunner(t, r)
	must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
	must.Eq(t, `task "plugin": csi_plugin: this client takes no plugin tasks (no plugin registry)`, r.Alloc().ClientDescription)

	h, _ = pluginHarness(t)
	bad := pluginTaskSpec("plugin", map[string]any{"command": "/bin/true"})
	bad.CSIPluginConfig.ID = ".."
	r = h.runner(testAlloc(structs.JobTypeSystem, bad))
	waitRunner(t, r)
	must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
	must.StrContains(t, r.Alloc().ClientDescription, `csi_plugin: volumemanager: invalid request: plugin ID ".." cannot name a directory`)

	h, _ = pluginHarness(t)
	h.dataDir = filepath.Join(h.dataDir, strings.Repeat("d", 90))
	r = h.runner(testAlloc(structs.JobTypeSystem, pluginTaskSpec("plugin", map[string]any{"command": "/bin/true"})))
	waitRunner(t, r)
	must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
	must.StrContains(t, r.Alloc().ClientDescription, "give the client a shorter data_dir")
}
