package volumemanager

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/moby/sys/mountinfo"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// hostpathNodeID is the node ID StartHostpath gives berth-hostpath.
const hostpathNodeID = "hostpath-node"

func requireRoot(t *testing.T) {
	t.Helper()
	testlog.NeedRoot(t, "berth-hostpath bind-mounts, which needs CAP_SYS_ADMIN")
}

// isMountPoint reports whether path is a mount point of this process's
// mount namespace (as mountinfo lists it).
func isMountPoint(t *testing.T, path string) bool {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	must.NoError(t, err)
	return len(infos) > 0
}

// hostpathVolume creates a volume on berth-hostpath and, unless the
// plugin runs with -disable-attach, controller-publishes it to its node.
func hostpathVolume(t *testing.T, p *csitest.Plugin, attach bool) (externalID string, publishContext map[string]string) {
	t.Helper()
	ctx := context.Background()
	cc, err := csi.Dial(ctx, p.Socket, testlog.Logger(t, "csi"), csi.WithPluginID("hostpath"))
	must.NoError(t, err)
	defer cc.Close()
	multi := &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
	v, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20,
		Capabilities: []*structs.CSIVolumeCapability{multi}})
	must.NoError(t, err)
	if attach {
		publishContext, err = cc.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
			ExternalVolumeID: v.ExternalVolumeID, ExternalNodeID: hostpathNodeID, Capability: multi})
		must.NoError(t, err)
	}
	return v.ExternalVolumeID, publishContext
}

// hostpathManager is a manager on its data dir, berth-hostpath registered
// as the monolith "hostpath" with one attached volume (extID, its publish
// context pc), and every mount undone at the end.
func hostpathManager(t *testing.T) (p *csitest.Plugin, m *Manager, extID string, pc map[string]string, dataDir string) {
	t.Helper()
	requireRoot(t)
	p = csitest.StartHostpath(t)
	extID, pc = hostpathVolume(t, p, true)
	dataDir = t.TempDir()
	m = newManager(t, dataDir, newRegistry(t, &dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, Socket: p.Socket}))
	unmountAllOnCleanup(t, m)
	return p, m, extID, pc, dataDir
}

// unmountAllOnCleanup undoes what a failed test left mounted, so that its
// temp dirs can be removed. It runs before the plugin is stopped.
func unmountAllOnCleanup(t *testing.T, m *Manager) {
	t.Cleanup(func() {
		m.mu.Lock()
		var users [][3]string
		for k, u := range m.usage {
			for a := range u.Allocs {
				users = append(users, [3]string{a, k.volume, k.plugin})
			}
			if len(u.Allocs) == 0 {
				users = append(users, [3]string{"cleanup", k.volume, k.plugin})
			}
		}
		m.mu.Unlock()
		for _, u := range users {
			if err := m.UnmountVolume(context.Background(), u[0], u[1], u[2], ""); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})
}

func TestManager_Hostpath_BindMounts(t *testing.T) {
	_, m, extID, pc, dataDir := hostpathManager(t)
	ctx := context.Background()
	mount := func(alloc string, readOnly bool) string {
		t.Helper()
		res, err := m.MountVolume(ctx, &MountRequest{AllocID: alloc, VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
			AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
			ReadOnly: readOnly, PublishContext: pc})
		must.NoError(t, err)
		must.True(t, isMountPoint(t, res.HostPath), must.Sprintf("%s is mounted", res.HostPath))
		return res.HostPath
	}
	staging := filepath.Join(PluginHostDir(dataDir, "hostpath"), "staging", "data")

	a1, a2 := mount("a1", false), mount("a2", false)
	must.True(t, isMountPoint(t, staging))
	must.NoError(t, os.WriteFile(filepath.Join(a1, "hello"), []byte("from a1"), 0o644))
	got, err := os.ReadFile(filepath.Join(a2, "hello"))
	must.NoError(t, err)
	must.Eq(t, "from a1", string(got), must.Sprint("one volume, seen by both allocs"))

	reader := mount("a3", true)
	err = os.WriteFile(filepath.Join(reader, "nope"), nil, 0o644)
	must.True(t, errors.Is(err, syscall.EROFS), must.Sprintf("a read-only mount: %v", err))

	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "hostpath", extID))
	must.False(t, isMountPoint(t, a1))
	must.DirNotExists(t, a1)
	must.True(t, isMountPoint(t, staging), must.Sprint("still staged for a2 and a3"))
	got, err = os.ReadFile(filepath.Join(a2, "hello"))
	must.NoError(t, err)
	must.Eq(t, "from a1", string(got))

	must.NoError(t, m.UnmountVolume(ctx, "a2", "data", "hostpath", extID))
	must.NoError(t, m.UnmountVolume(ctx, "a3", "data", "hostpath", extID))
	must.False(t, isMountPoint(t, staging))
	must.DirNotExists(t, staging)
	must.SliceEmpty(t, readUsage(t, dataDir).Volumes)

	// The data outlives the mounts.
	a4 := mount("a4", false)
	got, err = os.ReadFile(filepath.Join(a4, "hello"))
	must.NoError(t, err)
	must.Eq(t, "from a1", string(got))
	must.NoError(t, m.UnmountVolume(ctx, "a4", "data", "hostpath", extID))
	must.False(t, isMountPoint(t, a4))
}

func TestManager_Hostpath_NoStage(t *testing.T) {
	requireRoot(t)
	p := csitest.StartHostpath(t, "-disable-stage", "-disable-attach")
	extID, _ := hostpathVolume(t, p, false)
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, &dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeNode, Socket: p.Socket}))
	unmountAllOnCleanup(t, m)
	ctx := context.Background()

	res, err := m.MountVolume(ctx, &MountRequest{AllocID: "a1", VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
		AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem})
	must.NoError(t, err)
	must.True(t, isMountPoint(t, res.HostPath))
	u := readUsage(t, dataDir).Volumes[0]
	must.Eq(t, stageNone, u.Stage, must.Sprint("the plugin does not stage"))
	must.Eq(t, "", u.StagingPath)
	must.DirNotExists(t, filepath.Join(PluginHostDir(dataDir, "hostpath"), "staging"))

	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "hostpath", extID))
	must.False(t, isMountPoint(t, res.HostPath))
	must.SliceEmpty(t, readUsage(t, dataDir).Volumes)
}

// TestManager_Hostpath_LogKeysOnce: a mount and unmount logged at debug
// name each key once per line: the volume's berth ID is volume_id (from
// the step), the plugin's own ID external_id (from the CSI client).
func TestManager_Hostpath_LogKeysOnce(t *testing.T) {
	requireRoot(t)
	p := csitest.StartHostpath(t)
	extID, pc := hostpathVolume(t, p, true)
	dataDir := t.TempDir()
	var out strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: lockedWriter{&mu, &out}})
	m, err := New(Config{DataDir: dataDir, Registry: newRegistry(t, &dynamicplugins.PluginInfo{ID: "hostpath",
		Type: structs.CSIPluginTypeMonolith, Socket: p.Socket}), Logger: logger, Retry: fastRetry})
	must.NoError(t, err)
	unmountAllOnCleanup(t, m)
	ctx := context.Background()
	_, err = m.MountVolume(ctx, &MountRequest{AllocID: "a1", VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
		AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		PublishContext: pc})
	must.NoError(t, err)
	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "hostpath", extID))

	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	must.SliceNotEmpty(t, lines)
	sawExternal := false
	for _, l := range lines {
		for _, key := range []string{"volume_id=", "plugin_id=", "alloc_id=", "external_id="} {
			must.LessEq(t, 1, strings.Count(l, " "+key), must.Sprintf("%s more than once in: %s", key, l))
		}
		sawExternal = sawExternal || strings.Contains(l, "external_id="+extID)
	}
	must.True(t, sawExternal, must.Sprintf("the plugin's volume ID is logged as external_id:\n%s", out.String()))
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// CollectUsage asks berth-hostpath about every published use: the bytes
// and inodes of what a task wrote, against the volume's capacity, and the
// condition, normal, then abnormal once the volume's directory is gone
// (INACCESSIBLE), naming why. A use unpublished is no longer reported.
func TestManager_Hostpath_CollectUsage(t *testing.T) {
	p, m, extID, pc, _ := hostpathManager(t)
	ctx := context.Background()
	mount := func(alloc string) string {
		t.Helper()
		res, err := m.MountVolume(ctx, &MountRequest{AllocID: alloc, VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
			AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
			PublishContext: pc})
		must.NoError(t, err)
		return res.HostPath
	}
	a1 := mount("a1")
	mount("a2")
	must.NoError(t, os.WriteFile(filepath.Join(a1, "blob"), make([]byte, 256<<10), 0o644))
	must.NoError(t, os.Mkdir(filepath.Join(a1, "dir"), 0o755))

	now := func() time.Time { return time.Unix(42, 0) }
	reports := m.CollectUsage(ctx, now)
	must.Len(t, 2, reports)
	must.Eq(t, "a1", reports[0].AllocID)
	must.Eq(t, "a2", reports[1].AllocID)
	for _, r := range reports {
		u := r.Usage
		must.Eq(t, "data", r.VolumeID)
		must.Eq(t, "", u.Error)
		must.Eq(t, time.Unix(42, 0), u.CollectedAt)
		must.NotNil(t, u.Bytes)
		must.GreaterEq(t, int64(256<<10), u.Bytes.Used, must.Sprint("the blob's blocks"))
		must.Less(t, int64(1<<20), u.Bytes.Used)
		must.Eq(t, int64(1<<20), u.Bytes.Total, must.Sprint("the volume's capacity"))
		must.Eq(t, u.Bytes.Total-u.Bytes.Used, u.Bytes.Available)
		must.NotNil(t, u.Inodes)
		must.Eq(t, int64(3), u.Inodes.Used, must.Sprint("the root, blob and dir"))
		must.Eq(t, &structs.CSIVolumeCondition{}, u.Condition)
	}

	// The volume's directory goes (its mounts stay): abnormal.
	vols, err := os.ReadDir(filepath.Join(p.Root, "volumes"))
	must.NoError(t, err)
	must.Len(t, 1, vols)
	dir := filepath.Join(p.Root, "volumes", vols[0].Name())
	must.NoError(t, os.RemoveAll(filepath.Join(a1, "blob")))
	must.NoError(t, os.RemoveAll(filepath.Join(a1, "dir")))
	must.NoError(t, os.Rename(dir, dir+".moved"))
	t.Cleanup(func() { _ = os.Rename(dir+".moved", dir) })
	reports = m.CollectUsage(ctx, now)
	must.Len(t, 2, reports)
	cond := reports[0].Usage.Condition
	must.True(t, cond.Abnormal)
	must.StrContains(t, cond.Message, "INACCESSIBLE VolumeDirMissing")
	must.NoError(t, os.Rename(dir+".moved", dir))

	must.NoError(t, m.UnmountVolume(ctx, "a2", "data", "hostpath", extID))
	reports = m.CollectUsage(ctx, now)
	must.Len(t, 1, reports)
	must.Eq(t, "a1", reports[0].AllocID)
	must.False(t, reports[0].Usage.IsAbnormal())
}
