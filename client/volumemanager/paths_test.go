package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/structs"
)

func TestPluginHostDir(t *testing.T) {
	must.Eq(t, "/var/lib/berth/client/csi/hostpath", PluginHostDir("/var/lib/berth", "hostpath"))
}

func TestPathsFor(t *testing.T) {
	cases := []struct {
		name     string
		mountDir string
		want     volumePaths
	}{
		{"host paths", "", volumePaths{
			hostStaging: "/d/client/csi/p/staging/data", pluginStaging: "/d/client/csi/p/staging/data",
			hostTarget: "/d/client/csi/p/per-alloc/a1/data", pluginTarget: "/d/client/csi/p/per-alloc/a1/data",
		}},
		{"mount dir", "/csi", volumePaths{
			hostStaging: "/d/client/csi/p/staging/data", pluginStaging: "/csi/staging/data",
			hostTarget: "/d/client/csi/p/per-alloc/a1/data", pluginTarget: "/csi/per-alloc/a1/data",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &dynamicplugins.PluginInfo{ID: "p", MountDir: tc.mountDir}
			must.Eq(t, tc.want, pathsFor("/d", p, "a1", "data"))
		})
	}
}

func TestManager_MountDir(t *testing.T) {
	// The plugin sees its host dir at MountDir. Without a mount namespace,
	// a symlink from MountDir to the host dir gives the mock the same view
	// a plugin task has through its bind mount.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	dataDir := t.TempDir()
	host := PluginHostDir(dataDir, "mock")
	must.NoError(t, os.MkdirAll(host, 0o750))
	mountDir := filepath.Join(t.TempDir(), "csi")
	must.NoError(t, os.Symlink(host, mountDir))
	r := newRegistry(t, &dynamicplugins.PluginInfo{ID: "mock", Type: structs.CSIPluginTypeMonolith, Socket: p.Socket,
		Source: dynamicplugins.SourceTask, AllocID: "plugin-alloc", MountDir: mountDir})
	m := newManager(t, dataDir, r)
	ctx := context.Background()

	res, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	must.Eq(t, filepath.Join(host, "per-alloc", "a1", "data"), res.HostPath, must.Sprint("the host path, for the task"))
	must.DirExists(t, res.HostPath, must.Sprint("the plugin made the target through its view"))
	stage := mockCalls(t, p, "NodeStageVolume")
	must.SliceLen(t, 1, stage)
	must.StrContains(t, stage[0], `"staging_target_path":"`+mountDir+`/staging/data"`)
	publish := mockCalls(t, p, "NodePublishVolume")
	must.SliceLen(t, 1, publish)
	must.StrContains(t, publish[0], `"target_path":"`+mountDir+`/per-alloc/a1/data"`)
	must.StrContains(t, publish[0], `"staging_target_path":"`+mountDir+`/staging/data"`)

	u := readUsage(t, dataDir).Volumes[0]
	must.Eq(t, filepath.Join(host, "staging", "data"), u.StagingPath)
	must.Eq(t, mountDir+"/staging/data", u.PluginStagingPath)

	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "mock", "1"))
	must.StrContains(t, mockCalls(t, p, "NodeUnpublishVolume")[0], `"target_path":"`+mountDir+`/per-alloc/a1/data"`)
	must.StrContains(t, mockCalls(t, p, "NodeUnstageVolume")[0], `"staging_target_path":"`+mountDir+`/staging/data"`)
	must.DirNotExists(t, res.HostPath)
}

func TestManager_PerVolumeLock(t *testing.T) {
	slow := csitest.StartMockDriver(t, csitest.MockOptions{})
	fast := csitest.StartMockDriver(t, csitest.MockOptions{})
	m := newManager(t, t.TempDir(), newRegistry(t, node("slow", slow.Socket), node("fast", fast.Socket)))
	req := func(plugin, alloc, volume string) *MountRequest {
		r := mountReq(alloc)
		r.PluginID, r.VolumeID = plugin, volume
		return r
	}

	// A hung plugin holds the volume's lock in its call...
	slow.Pause()
	ctxA, cancelA := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := m.MountVolume(ctxA, req("slow", "a1", "data")); errs <- err }()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return m.locks.Len() == 1 }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	// ...and another volume of the same plugin goes ahead to the plugin
	// (where it hangs too)...
	go func() { _, err := m.MountVolume(ctxA, req("slow", "a1", "other")); errs <- err }()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return m.locks.Len() == 2 }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))

	// ...while a second call for the volume waits its turn, until its
	// context ends...
	ctxB, cancelB := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelB()
	_, err := m.MountVolume(ctxB, req("slow", "a2", "data"))
	must.ErrorIs(t, err, context.DeadlineExceeded)
	must.ErrorContains(t, err, `volume "data" for alloc a2: wait for the volume's other operations with plugin "slow": context deadline exceeded`)
	// ...and volumes of other plugins are not held up at all.
	_, err = m.MountVolume(context.Background(), req("fast", "a3", "data"))
	must.NoError(t, err)

	cancelA()
	for range 2 {
		err := <-errs
		must.Eq(t, csi.CodeCanceled, csi.CodeOf(err), must.Sprint(err))
		must.False(t, csi.IsFinal(err))
	}
	slow.Resume()
	_, err = m.MountVolume(context.Background(), req("slow", "a2", "data"))
	must.NoError(t, err)
	must.Eq(t, 0, m.locks.Len(), must.Sprint("no lock is left behind"))
}
