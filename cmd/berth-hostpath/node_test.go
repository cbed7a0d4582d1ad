package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

// nodeFixture is a plugin with one volume, controller-published to its
// node, and the directories a CO would prepare for it.
type nodeFixture struct {
	cfg     Config
	cs      *controllerServer
	ns      *nodeServer
	vol     string // volume ID
	staging string // created, like a CO does
	targets string // parent of target paths, created
}

func newNodeFixture(t *testing.T, mutate func(*Config)) *nodeFixture {
	t.Helper()
	requireRoot(t)
	cfg := testConfig(t)
	if mutate != nil {
		mutate(&cfg)
	}
	work := t.TempDir()
	f := &nodeFixture{cfg: cfg, staging: filepath.Join(work, "staging"), targets: filepath.Join(work, "pods")}
	unmountUnder(t, work, cfg.Root)
	_, f.cs, f.ns = services(newTestDriver(t, cfg))
	f.vol = createVolume(t, f.cs, "data", 1<<20).VolumeId
	must.NoError(t, os.Mkdir(f.staging, 0o750))
	must.NoError(t, os.Mkdir(f.targets, 0o750))
	if !cfg.DisableAttach {
		f.controllerPublish(t, false)
	}
	return f
}

func (f *nodeFixture) controllerPublish(t *testing.T, readonly bool) {
	t.Helper()
	_, err := f.cs.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: f.vol, NodeId: f.cfg.NodeID, VolumeCapability: mountCap(singleWriter), Readonly: readonly})
	must.NoError(t, err)
}

func (f *nodeFixture) stage(c *csi.VolumeCapability, publishContext map[string]string) error {
	_, err := f.ns.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: f.vol, StagingTargetPath: f.staging, VolumeCapability: c, PublishContext: publishContext})
	return err
}

func (f *nodeFixture) publish(target string, c *csi.VolumeCapability, readonly bool) error {
	_, err := f.ns.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: f.vol, StagingTargetPath: f.staging, TargetPath: target, VolumeCapability: c, Readonly: readonly})
	return err
}

func (f *nodeFixture) unpublish(target string) error {
	_, err := f.ns.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: f.vol, TargetPath: target})
	return err
}

func (f *nodeFixture) unstage() error {
	_, err := f.ns.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: f.vol, StagingTargetPath: f.staging})
	return err
}

func mustMounted(t *testing.T, path string, want bool) {
	t.Helper()
	got, err := isMountPoint(path)
	must.NoError(t, err)
	must.Eq(t, want, got, must.Sprintf("is %s a mount point", path))
}

// mustWritable checks whether a file can be created at dir.
func mustWritable(t *testing.T, dir string, want bool) {
	t.Helper()
	err := os.WriteFile(filepath.Join(dir, "probe"), []byte("x"), 0o644)
	if want {
		must.NoError(t, err)
		must.NoError(t, os.Remove(filepath.Join(dir, "probe")))
	} else {
		must.ErrorIs(t, err, unix.EROFS)
	}
}

func TestNode_Lifecycle(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, nil)
	target := filepath.Join(f.targets, "target")
	c := mountCap(singleWriter)

	for range 3 {
		must.NoError(t, f.stage(c, map[string]string{"readonly": "false"}))
	}
	mustMounted(t, f.staging, true)
	for range 3 {
		must.NoError(t, f.publish(target, c, false))
	}
	mustMounted(t, target, true)

	// what the workload writes lands in the volume directory
	must.NoError(t, os.WriteFile(filepath.Join(target, "file"), []byte("data"), 0o644))
	got, err := os.ReadFile(filepath.Join(f.cfg.Root, "volumes", f.vol, "file"))
	must.NoError(t, err)
	must.Eq(t, "data", string(got))

	for _, p := range []string{target, f.staging, target + "/"} {
		stats, err := f.ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: f.vol, VolumePath: p})
		must.NoError(t, err)
		must.Len(t, 2, stats.Usage)
		must.Eq(t, csi.VolumeUsage_BYTES, stats.Usage[0].Unit)
		must.Positive(t, stats.Usage[0].Total)
	}
	exp, err := f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: f.vol, VolumePath: target})
	must.NoError(t, err)
	must.Eq(t, int64(1<<20), exp.CapacityBytes)
	_, err = f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: f.vol, VolumePath: target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
	mustCode(t, err, codes.OutOfRange, "call ControllerExpandVolume first")
	// After the controller's expand, the node's answers the new capacity,
	// at the published path with the staging path, or at the staging path.
	grown, err := f.cs.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: f.vol,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
	must.NoError(t, err)
	must.True(t, grown.NodeExpansionRequired)
	for _, p := range []string{target, f.staging} {
		exp, err = f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: f.vol, VolumePath: p, StagingTargetPath: f.staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}, VolumeCapability: c})
		must.NoError(t, err)
		must.Eq(t, int64(2<<20), exp.CapacityBytes)
	}
	_, err = f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: f.vol, VolumePath: filepath.Join(f.targets, "elsewhere")})
	mustCode(t, err, codes.NotFound, "not staged or published at")
	_, err = f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: f.vol, VolumePath: target, StagingTargetPath: target})
	mustCode(t, err, codes.NotFound, "not staged at staging_target_path "+target)

	_, err = f.cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: f.vol})
	mustCode(t, err, codes.FailedPrecondition, "staged at "+f.staging, "published at "+target)
	mustCode(t, f.unstage(), codes.FailedPrecondition, "still published at "+target)

	for range 3 {
		must.NoError(t, f.unpublish(target))
	}
	_, err = os.Stat(target)
	must.ErrorIs(t, err, os.ErrNotExist, must.Sprint("NodeUnpublishVolume removes the target"))
	for range 3 {
		must.NoError(t, f.unstage())
	}
	mustMounted(t, f.staging, false)
	_, err = os.Stat(f.staging)
	must.NoError(t, err, must.Sprint("the CO owns the staging directory"))

	_, err = f.cs.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: f.vol, NodeId: f.cfg.NodeID})
	must.NoError(t, err)
	_, err = f.cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: f.vol})
	must.NoError(t, err)
	mustCode(t, f.unpublish(target), codes.NotFound, "volume "+f.vol+" not found")
	mustCode(t, f.unstage(), codes.NotFound, "volume "+f.vol+" not found")
}

func TestNode_Readonly(t *testing.T) {
	c := mountCap(singleWriter)
	t.Run("controller publish readonly", func(t *testing.T) {
		f := newNodeFixture(t, func(c *Config) { c.DisableAttach = true })
		f.cfg.DisableAttach = false
		_, f.cs, f.ns = services(newTestDriver(t, f.cfg)) // same root, attach on
		f.controllerPublish(t, true)
		must.NoError(t, f.stage(c, nil)) // the attachment says so, with or without publish_context
		must.NoError(t, f.stage(c, map[string]string{"readonly": "true"}))
		mustWritable(t, f.staging, false)
		target := filepath.Join(f.targets, "t")
		must.NoError(t, f.publish(target, c, false))
		mustWritable(t, target, false)
	})
	t.Run("node publish readonly", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, f.stage(c, nil))
		target := filepath.Join(f.targets, "t")
		must.NoError(t, f.publish(target, c, true))
		mustWritable(t, target, false)
		mustWritable(t, f.staging, true)
		mustCode(t, f.publish(target, c, false), codes.AlreadyExists, "already published at "+target, "readonly=true")
	})
	t.Run("reader-only access mode", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		ro := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
		must.NoError(t, f.stage(ro, nil))
		target := filepath.Join(f.targets, "t")
		must.NoError(t, f.publish(target, ro, false))
		mustWritable(t, target, false)
	})
}

func TestNode_MountFlags(t *testing.T) {
	f := newNodeFixture(t, nil)
	c := mountCap(singleWriter, "noexec", "nosuid")
	must.NoError(t, f.stage(c, nil))
	target := filepath.Join(f.targets, "t")
	must.NoError(t, f.publish(target, c, false))
	var fs unix.Statfs_t
	must.NoError(t, unix.Statfs(target, &fs))
	must.NotEq(t, 0, fs.Flags&unix.ST_NOEXEC)
	must.NotEq(t, 0, fs.Flags&unix.ST_NOSUID)
	mustWritable(t, target, true)

	mustCode(t, f.publish(target, mountCap(singleWriter, "noexec"), false), codes.AlreadyExists, "2 mount flags")
}

func TestNodePublish_SecondTarget(t *testing.T) {
	cases := []struct {
		mode    csi.VolumeCapability_AccessMode_Mode
		allowed bool
	}{
		{csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, false},
		{csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false},
		{csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, true},
		{csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, true},
		{csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, true},
		{csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, true},
	}
	for _, tc := range cases {
		t.Run(tc.mode.String(), func(t *testing.T) {
			f := newNodeFixture(t, nil)
			c := mountCap(tc.mode)
			must.NoError(t, f.stage(c, nil))
			one, two := filepath.Join(f.targets, "one"), filepath.Join(f.targets, "two")
			must.NoError(t, f.publish(one, c, false))
			err := f.publish(two, c, false)
			if !tc.allowed {
				mustCode(t, err, codes.FailedPrecondition, "already published at "+one, "one target path per node")
				_, serr := os.Stat(two)
				must.ErrorIs(t, serr, os.ErrNotExist)
				return
			}
			must.NoError(t, err)
			mustMounted(t, two, true)
			// another capability at a third target is refused
			other := mountCap(tc.mode, "noexec")
			mustCode(t, f.publish(filepath.Join(f.targets, "three"), other, false), codes.FailedPrecondition, "another capability")
			must.NoError(t, f.unpublish(one))
			must.NoError(t, f.unpublish(two))
		})
	}
}

func TestNode_Preconditions(t *testing.T) {
	ctx := context.Background()
	c := mountCap(singleWriter)

	t.Run("stage before controller publish", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		_, err := f.cs.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: f.vol})
		must.NoError(t, err)
		mustCode(t, f.stage(c, nil), codes.FailedPrecondition, "not controller-published to node \"node-1\"")
	})
	t.Run("staging path missing", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, os.Remove(f.staging))
		mustCode(t, f.stage(c, nil), codes.FailedPrecondition, "staging path "+f.staging+" is not a directory")
		must.MapEmpty(t, f.cs.store.current().Stages)
	})
	t.Run("restage with another capability", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, f.stage(c, nil))
		mustCode(t, f.stage(mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER), nil),
			codes.AlreadyExists, "already staged at "+f.staging)
	})
	t.Run("a second staging path", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, f.stage(c, nil))
		first := f.staging
		f.staging = filepath.Join(f.targets, "other-staging")
		must.NoError(t, os.Mkdir(f.staging, 0o750))
		mustCode(t, f.stage(c, nil), codes.FailedPrecondition, "already staged at "+first)
	})
	t.Run("publish without staging", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		mustCode(t, f.publish(filepath.Join(f.targets, "t"), c, false), codes.FailedPrecondition, "not staged at "+f.staging)
		_, err := f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: f.vol,
			TargetPath: filepath.Join(f.targets, "t"), VolumeCapability: c})
		mustCode(t, err, codes.FailedPrecondition, "staging_target_path is missing")
	})
	t.Run("target parent missing", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, f.stage(c, nil))
		mustCode(t, f.publish(filepath.Join(f.targets, "no", "t"), c, false), codes.FailedPrecondition, "the CO creates it")
	})
	t.Run("target used by another volume", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		must.NoError(t, f.stage(c, nil))
		target := filepath.Join(f.targets, "t")
		must.NoError(t, f.publish(target, c, false))
		first := f.vol
		f.vol = createVolume(t, f.cs, "other", 0).VolumeId
		f.controllerPublish(t, false)
		f.staging = filepath.Join(f.targets, "staging2")
		must.NoError(t, os.Mkdir(f.staging, 0o750))
		must.NoError(t, f.stage(c, nil))
		mustCode(t, f.publish(target, c, false), codes.FailedPrecondition, "in use by volume "+first)
		must.NoError(t, f.unpublish(target), must.Sprint("not published there: OK, and nothing is touched"))
		mustMounted(t, target, true)
	})
	t.Run("relative paths", func(t *testing.T) {
		f := newNodeFixture(t, nil)
		f.staging = "staging"
		mustCode(t, f.stage(c, nil), codes.InvalidArgument, "not an absolute path")
		mustCode(t, f.unpublish("pods/t"), codes.InvalidArgument, "not an absolute path")
	})
}

func TestNode_Stats(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, nil)
	c := mountCap(singleWriter)
	must.NoError(t, f.stage(c, nil))
	stats := func(id, path string) error {
		_, err := f.ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: path})
		return err
	}
	mustCode(t, stats("vol-gone", f.staging), codes.NotFound, "volume vol-gone not found")
	mustCode(t, stats(f.vol, f.targets), codes.NotFound, "not staged or published at "+f.targets)
	must.NoError(t, unix.Unmount(f.staging, 0))
	mustCode(t, stats(f.vol, f.staging), codes.NotFound, "not mounted there")

	// a repeated stage puts back a mount that went away
	must.NoError(t, f.stage(c, nil))
	must.NoError(t, stats(f.vol, f.staging))
}

func TestNode_RestartKeepsMounts(t *testing.T) {
	f := newNodeFixture(t, nil)
	c := mountCap(singleWriter)
	must.NoError(t, f.stage(c, nil))
	target := filepath.Join(f.targets, "t")
	must.NoError(t, f.publish(target, c, false))

	_, f.cs, f.ns = services(newTestDriver(t, f.cfg)) // the plugin restarts
	must.NoError(t, f.stage(c, nil))
	must.NoError(t, f.publish(target, c, false))
	mustCode(t, f.publish(target, c, true), codes.AlreadyExists)
	must.NoError(t, f.unpublish(target))
	must.NoError(t, f.unstage())
	mustMounted(t, target, false)
	mustMounted(t, f.staging, false)
	_, err := os.Stat(target)
	must.True(t, errors.Is(err, os.ErrNotExist))
}

func TestNode_DisableStage(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, func(c *Config) { c.DisableStage = true })
	caps, err := f.ns.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	must.NoError(t, err)
	for _, cp := range caps.Capabilities {
		must.NotEq(t, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, cp.GetRpc().GetType())
	}
	c := mountCap(singleWriter)
	mustCode(t, f.stage(c, nil), codes.Unimplemented, "-disable-stage")

	target := filepath.Join(f.targets, "t")
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: f.vol, TargetPath: target, VolumeCapability: c})
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(filepath.Join(target, "f"), nil, 0o644))
	_, err = os.Stat(filepath.Join(f.cfg.Root, "volumes", f.vol, "f"))
	must.NoError(t, err)
	must.NoError(t, f.unpublish(target))

	// still needs the controller publish
	_, err = f.cs.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: f.vol})
	must.NoError(t, err)
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: f.vol, TargetPath: target, VolumeCapability: c})
	mustCode(t, err, codes.FailedPrecondition, "not controller-published")
}

func TestNodePublish_TargetTheCOMade(t *testing.T) {
	f := newNodeFixture(t, nil)
	c := mountCap(singleWriter)
	must.NoError(t, f.stage(c, nil))
	target := filepath.Join(f.targets, "t")
	must.NoError(t, os.Mkdir(target, 0o700))
	must.NoError(t, f.publish(target, c, false))
	mustMounted(t, target, true)
	must.NoError(t, f.unpublish(target))
	mustMounted(t, target, false)
	_, err := os.Stat(target)
	must.NoError(t, err, must.Sprint("a target the CO created is the CO's to remove"))

	file := filepath.Join(f.targets, "file")
	must.NoError(t, os.WriteFile(file, nil, 0o600))
	mustCode(t, f.publish(file, c, false), codes.FailedPrecondition, "exists and is not a directory")

	// someone else's mount is not taken over, nor taken away
	must.NoError(t, bindMount(f.targets, target, false, nil))
	mustCode(t, f.publish(target, c, false), codes.FailedPrecondition, target+" is already a mount point")
	must.NoError(t, f.unpublish(target))
	mustMounted(t, target, true)
	must.NoError(t, unmount(target))
}

func TestNodeStage_ForeignMount(t *testing.T) {
	f := newNodeFixture(t, nil)
	must.NoError(t, bindMount(f.targets, f.staging, false, nil))
	mustCode(t, f.stage(mountCap(singleWriter), nil), codes.FailedPrecondition, f.staging+" is already a mount point")
	must.MapEmpty(t, f.cs.store.current().Stages)
	must.NoError(t, f.unstage())
	mustMounted(t, f.staging, true)
	must.NoError(t, unmount(f.staging))
}

func TestNodePublish_FinishesAfterACrash(t *testing.T) {
	f := newNodeFixture(t, nil)
	c := mountCap(singleWriter)
	must.NoError(t, f.stage(c, nil))
	target := filepath.Join(f.targets, "t")
	must.NoError(t, f.publish(target, c, false))
	// as if the plugin died after recording the publish, before the mount
	must.NoError(t, unmount(target))
	must.NoError(t, os.Remove(target))
	_, f.cs, f.ns = services(newTestDriver(t, f.cfg))

	must.NoError(t, f.publish(target, c, false))
	mustMounted(t, target, true)
	must.NoError(t, f.unpublish(target))
	_, err := os.Stat(target)
	must.ErrorIs(t, err, os.ErrNotExist)
}

// VOLUME_MOUNT_GROUP: a stage or publish with volume_mount_group gives the
// volume's directory to that group with g+rwxs (not what is inside it); a
// read-only publish changes nothing; a group that is not a number is
// INVALID_ARGUMENT, before anything is mounted.
func TestNode_VolumeMountGroup(t *testing.T) {
	f := newNodeFixture(t, nil)
	dir := f.ns.volumeDir(f.vol)
	inside := filepath.Join(dir, "kept")
	must.NoError(t, os.Mkdir(inside, 0o700))
	withGroup := func(mode csi.VolumeCapability_AccessMode_Mode, g string) *csi.VolumeCapability {
		c := mountCap(mode)
		c.GetMount().VolumeMountGroup = g
		return c
	}
	groupOf := func(p string) (uint32, os.FileMode) {
		t.Helper()
		var st unix.Stat_t
		must.NoError(t, unix.Lstat(p, &st))
		return st.Gid, os.FileMode(st.Mode & 0o7777)
	}

	mustCode(t, f.stage(withGroup(singleWriter, "staff"), nil), codes.InvalidArgument, `volume_mount_group "staff" is not a numeric group ID`)
	mustMounted(t, f.staging, false)

	must.NoError(t, f.stage(withGroup(singleWriter, "4242"), nil))
	gid, mode := groupOf(dir)
	must.Eq(t, uint32(4242), gid)
	must.Eq(t, os.FileMode(0o2777), mode, must.Sprint("0777 as made, with setgid"))
	gid, _ = groupOf(inside)
	must.Eq(t, uint32(0), gid, must.Sprint("never recursive"))

	target := filepath.Join(f.targets, "ro")
	must.NoError(t, f.publish(target, withGroup(singleWriter, "4343"), true))
	gid, _ = groupOf(dir)
	must.Eq(t, uint32(4242), gid, must.Sprint("a read-only publish leaves the group"))
	must.NoError(t, f.unpublish(target))
}
