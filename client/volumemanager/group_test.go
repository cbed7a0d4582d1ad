package volumemanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// statGroup is a path's group and permission bits, not following a link.
func statGroup(t *testing.T, p string) (uint32, os.FileMode) {
	t.Helper()
	var st unix.Stat_t
	must.NoError(t, unix.Lstat(p, &st))
	return st.Gid, os.FileMode(st.Mode & 0o7777)
}

// giveGroup: on-root-mismatch changes a root that is not the group's with
// g+rwxs, and then leaves it; always changes it each time; a link where
// the root should be is refused, and what it points at is left alone.
func TestGiveGroup(t *testing.T) {
	testlog.NeedRoot(t, "gives a directory to another group")
	dir := filepath.Join(t.TempDir(), "root")
	must.NoError(t, os.Mkdir(dir, 0o755))
	must.NoError(t, os.Chmod(dir, 0o755))

	changed, err := giveGroup(dir, &MountGroup{GID: 4242})
	must.NoError(t, err)
	must.True(t, changed)
	gid, mode := statGroup(t, dir)
	must.Eq(t, uint32(4242), gid)
	must.Eq(t, os.FileMode(0o2775), mode)

	changed, err = giveGroup(dir, &MountGroup{GID: 4242, Policy: structs.GroupPolicyOnRootMismatch})
	must.NoError(t, err)
	must.False(t, changed, must.Sprint("already the group's"))
	changed, err = giveGroup(dir, &MountGroup{GID: 4242, Policy: structs.GroupPolicyAlways})
	must.NoError(t, err)
	must.True(t, changed)

	// The group bits taken away: a mismatch again.
	must.NoError(t, os.Chmod(dir, 0o755))
	changed, err = giveGroup(dir, &MountGroup{GID: 4242})
	must.NoError(t, err)
	must.True(t, changed)

	// A link planted at the root's path.
	victim := filepath.Join(t.TempDir(), "victim")
	must.NoError(t, os.Mkdir(victim, 0o700))
	link := filepath.Join(t.TempDir(), "link")
	must.NoError(t, os.Symlink(victim, link))
	_, err = giveGroup(link, &MountGroup{GID: 4242, Policy: structs.GroupPolicyAlways})
	must.True(t, errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR), must.Sprintf("a link refused: %v", err))
	gid, mode = statGroup(t, victim)
	must.Eq(t, uint32(0), gid)
	must.Eq(t, os.FileMode(0o700), mode)
}

// With the csi-test mock, which has no VOLUME_MOUNT_GROUP and makes its
// targets root:root 0755: the client gives a writable target to the
// tasks' group; not a read-only one, nor under group_policy "none"; the
// mock is never sent a volume_mount_group.
func TestManager_Mock_GroupPolicy(t *testing.T) {
	testlog.NeedRoot(t, "gives a directory to another group")
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	m := newManager(t, t.TempDir(), newRegistry(t, node("mock", p.Socket)))
	ctx := context.Background()
	var by string
	mount := func(alloc string, readOnly bool, g *MountGroup) string {
		t.Helper()
		req := mountReq(alloc)
		req.ReadOnly, req.Group = readOnly, g
		res, err := m.MountVolume(ctx, req)
		must.NoError(t, err)
		by = res.GroupBy
		return res.HostPath
	}
	nobody := &MountGroup{GID: 65534}

	w := mount("a1", false, nobody)
	must.Eq(t, GroupByClient, by)
	gid, mode := statGroup(t, w)
	must.Eq(t, uint32(65534), gid)
	must.Eq(t, os.FileMode(0o2775), mode, must.Sprint("the mock's 0755, with g+rwxs"))

	ro := mount("a2", true, nobody)
	must.Eq(t, "", by)
	gid, mode = statGroup(t, ro)
	must.Eq(t, uint32(0), gid)
	must.Eq(t, os.FileMode(0o755), mode)

	none := mount("a3", false, &MountGroup{GID: 65534, Policy: structs.GroupPolicyNone})
	gid, _ = statGroup(t, none)
	must.Eq(t, uint32(0), gid)

	root := mount("a4", false, nil)
	gid, _ = statGroup(t, root)
	must.Eq(t, uint32(0), gid, must.Sprint("no non-root writer: nothing to give"))

	for _, call := range append(mockCalls(t, p, "NodePublishVolume"), mockCalls(t, p, "NodeStageVolume")...) {
		must.StrNotContains(t, call, "volume_mount_group", must.Sprint(call))
	}
}

// berth-hostpath has VOLUME_MOUNT_GROUP: it is sent the group and gives
// the volume's directory to it itself.
func TestManager_Hostpath_VolumeMountGroup(t *testing.T) {
	p, m, extID, pc, _ := hostpathManager(t)
	res, err := m.MountVolume(context.Background(), &MountRequest{AllocID: "a1", VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
		AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		PublishContext: pc, Group: &MountGroup{GID: 4242, Policy: structs.GroupPolicyAlways}})
	must.NoError(t, err)
	must.Eq(t, GroupByPlugin, res.GroupBy)
	gid, mode := statGroup(t, res.HostPath)
	must.Eq(t, uint32(4242), gid)
	must.Eq(t, os.FileMode(0o2777), mode, must.Sprint("the plugin's 0777, with setgid"))
	log, err := os.ReadFile(p.LogPath)
	must.NoError(t, err)
	must.StrNotContains(t, string(log), "volume_mount_group: ", must.Sprint("no error from the plugin"))
}

// A block volume's non-root tasks get the client's own node of the
// device, of their group (0440 read only): the plugin's node is left
// root's; the unmount removes the client's.
func TestManager_Hostpath_BlockTaskDevice(t *testing.T) {
	requireRoot(t)
	p := csitest.StartHostpath(t)
	ctx := context.Background()
	cc, err := csi.Dial(ctx, p.Socket, testlog.Logger(t, "csi"), csi.WithPluginID("hostpath"))
	must.NoError(t, err)
	defer cc.Close()
	blockCap := &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}
	v, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "disk", CapacityMin: 4 << 20, Capabilities: []*structs.CSIVolumeCapability{blockCap}})
	must.NoError(t, err)
	pc, err := cc.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{ExternalVolumeID: v.ExternalVolumeID,
		ExternalNodeID: hostpathNodeID, Capability: blockCap})
	must.NoError(t, err)
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, &dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, Socket: p.Socket}))
	unmountAllOnCleanup(t, m)
	mount := func(alloc string, readOnly bool) *MountResult {
		t.Helper()
		res, err := m.MountVolume(ctx, &MountRequest{AllocID: alloc, VolumeID: "disk", ExternalVolumeID: v.ExternalVolumeID, PluginID: "hostpath",
			AccessMode: blockCap.AccessMode, AttachmentMode: blockCap.AttachmentMode, ReadOnly: readOnly, PublishContext: pc,
			Group: &MountGroup{GID: 4242}})
		must.NoError(t, err)
		return res
	}
	rw := mount("a1", false)
	must.Eq(t, GroupByClient, rw.GroupBy)
	must.StrContains(t, rw.HostPath, "/"+taskDeviceDir+"/")
	var st, plugin unix.Stat_t
	must.NoError(t, unix.Lstat(rw.HostPath, &st))
	must.Eq(t, uint32(unix.S_IFBLK|0o660), st.Mode)
	must.Eq(t, uint32(4242), st.Gid)
	host := PluginHostDir(dataDir, "hostpath")
	must.StrNotContains(t, rw.HostPath, host, must.Sprint("outside what the plugin sees"))
	target := filepath.Join(host, "per-alloc", "a1", "disk")
	must.NoError(t, unix.Lstat(target, &plugin))
	must.Eq(t, st.Rdev, plugin.Rdev, must.Sprint("the same device"))
	must.Eq(t, uint32(0), plugin.Gid, must.Sprint("the plugin's node is left as it made it"))
	again := mount("a1", false)
	must.Eq(t, rw.HostPath, again.HostPath, must.Sprint("a repeated mount returns the client's node"))

	// A node gone (a crash after the publish was recorded), or one of
	// another device (a reboot since), is made again by the next mount.
	must.NoError(t, os.Remove(rw.HostPath))
	mount("a1", false)
	must.NoError(t, unix.Lstat(rw.HostPath, &st))
	must.Eq(t, plugin.Rdev, st.Rdev)
	must.NoError(t, os.Remove(rw.HostPath))
	must.NoError(t, unix.Mknod(rw.HostPath, unix.S_IFBLK|0o666, int(unix.Mkdev(7, 250))))
	mount("a1", false)
	must.NoError(t, unix.Lstat(rw.HostPath, &st))
	must.Eq(t, plugin.Rdev, st.Rdev, must.Sprint("the stale node replaced"))
	must.Eq(t, uint32(unix.S_IFBLK|0o660), st.Mode)

	ro := mount("a2", true)
	must.NoError(t, unix.Lstat(ro.HostPath, &st))
	must.Eq(t, uint32(unix.S_IFBLK|0o440), st.Mode)

	must.NoError(t, m.UnmountVolume(ctx, "a1", "disk", "hostpath", v.ExternalVolumeID))
	_, err = os.Lstat(rw.HostPath)
	must.ErrorIs(t, err, os.ErrNotExist)
	must.NoError(t, m.UnmountVolume(ctx, "a2", "disk", "hostpath", v.ExternalVolumeID))
}
