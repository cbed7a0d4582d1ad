package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

// deviceSize is a block device's size in bytes.
func deviceSize(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	must.NoError(t, err)
	defer f.Close()
	n, err := f.Seek(0, 2)
	must.NoError(t, err)
	return n
}

// A block volume's life on one node: the image is a loop device once
// staged, the target a device node of it that reads back what was
// written through it, an expansion grows the device in use, and the
// last unstage detaches the loop device. The other access type is
// refused at every step that takes one.
func TestNode_BlockVolume(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, nil)
	bc := blockCap(singleWriter)
	resp, err := f.cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "disk", CapacityRange: &csi.CapacityRange{RequiredBytes: 8 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{bc}})
	must.NoError(t, err)
	id := resp.Volume.VolumeId
	img := f.ns.blockImage(id)
	fi, err := os.Stat(img)
	must.NoError(t, err)
	must.Eq(t, int64(8<<20), fi.Size())
	_, err = f.cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: f.cfg.NodeID, VolumeCapability: bc})
	must.NoError(t, err)

	staging := filepath.Join(t.TempDir(), "staging")
	must.NoError(t, os.Mkdir(staging, 0o750))
	_, err = f.ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: mountCap(singleWriter)})
	mustCode(t, err, codes.InvalidArgument, "is a block volume; use the block access type")
	_, err = f.ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: bc})
	must.NoError(t, err)
	dev := f.ns.volumeLoop(f.ns.store.current(), id)
	must.StrHasPrefix(t, "/dev/loop", dev)
	t.Cleanup(func() { _ = detachLoop(dev) })
	backing, err := loopBacking(dev)
	must.NoError(t, err)
	must.Eq(t, img, backing)

	target := filepath.Join(f.targets, "disk")
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: bc})
	must.NoError(t, err)
	var st unix.Stat_t
	must.NoError(t, unix.Lstat(target, &st))
	must.Eq(t, uint32(unix.S_IFBLK), st.Mode&unix.S_IFMT)
	must.Eq(t, uint32(0o660), st.Mode&0o7777)

	data := bytes.Repeat([]byte("berth"), 1000)
	w, err := os.OpenFile(target, os.O_WRONLY, 0)
	must.NoError(t, err)
	_, err = w.WriteAt(data, 4096)
	must.NoError(t, err)
	must.NoError(t, w.Sync())
	must.NoError(t, w.Close())
	got := make([]byte, len(data))
	r, err := os.Open(img)
	must.NoError(t, err)
	_, err = r.ReadAt(got, 4096)
	r.Close()
	must.NoError(t, err)
	must.Eq(t, data, got, must.Sprint("written through the device node, in the image"))

	stats, err := f.ns.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
	must.NoError(t, err)
	must.Eq(t, int64(8<<20), stats.Usage[0].Total)
	must.Positive(t, stats.Usage[0].Used)

	// Expand, in use: the image, then the device.
	_, err = f.cs.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
	must.NoError(t, err)
	_, err = f.ns.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
	must.NoError(t, err)
	must.Eq(t, int64(16<<20), deviceSize(t, target))

	_, err = f.ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	must.NoError(t, err)
	_, err = os.Lstat(target)
	must.ErrorIs(t, err, os.ErrNotExist)
	_, err = f.ns.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
	must.NoError(t, err)
	backing, err = loopBacking(dev)
	must.NoError(t, err)
	must.Eq(t, "", backing, must.Sprint("the loop device is detached"))

	// Mixed access types, and a mount volume used as a block device.
	_, err = f.cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "mixed",
		VolumeCapabilities: []*csi.VolumeCapability{bc, mountCap(singleWriter)}})
	mustCode(t, err, codes.InvalidArgument, "mix the block and mount access types")
	_, err = f.cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "disk", VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}})
	mustCode(t, err, codes.AlreadyExists, "the block access type")
	_, err = f.ns.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: f.vol, StagingTargetPath: f.staging, VolumeCapability: bc})
	mustCode(t, err, codes.InvalidArgument, "is a directory (mount access type)")
	v, err := f.cs.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}})
	must.NoError(t, err)
	must.Nil(t, v.Confirmed)
}

// Under -disable-stage a publish attaches the loop device itself, and
// its unpublish detaches it; a block volume with no capacity gets 64 MiB.
func TestNode_BlockVolume_NoStage(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, func(c *Config) { c.DisableStage = true })
	bc := blockCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	resp, err := f.cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "disk", VolumeCapabilities: []*csi.VolumeCapability{bc}})
	must.NoError(t, err)
	id := resp.Volume.VolumeId
	must.Eq(t, int64(defaultBlockBytes), resp.Volume.CapacityBytes)
	_, err = f.cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: f.cfg.NodeID, VolumeCapability: bc})
	must.NoError(t, err)
	target := filepath.Join(f.targets, "disk")
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: bc, Readonly: true})
	must.NoError(t, err)
	dev := f.ns.volumeLoop(f.ns.store.current(), id)
	must.NotEq(t, "", dev)
	t.Cleanup(func() { _ = detachLoop(dev) })
	var st unix.Stat_t
	must.NoError(t, unix.Lstat(target, &st))
	must.Eq(t, uint32(0o440), st.Mode&0o7777, must.Sprint("a read-only publish's node"))
	must.Eq(t, int64(defaultBlockBytes), deviceSize(t, target))

	// A second publish shares the device; whichever goes last detaches
	// it, the one that attached it going first.
	second := filepath.Join(f.targets, "disk2")
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: second, VolumeCapability: bc})
	must.NoError(t, err)
	must.Eq(t, dev, f.ns.volumeLoop(f.ns.store.current(), id))
	_, err = f.ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	must.NoError(t, err)
	backing, err := loopBacking(dev)
	must.NoError(t, err)
	must.Eq(t, f.ns.blockImage(id), backing, must.Sprint("still used by the second publish"))
	_, err = f.ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: second})
	must.NoError(t, err)
	backing, err = loopBacking(dev)
	must.NoError(t, err)
	must.Eq(t, "", backing)
}

// A loop device that a record names but that is now another file's (the
// node rebooted, the number was reused) is never detached for the volume.
func TestNode_BlockVolume_ReusedLoopNumber(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, func(c *Config) { c.DisableStage = true })
	bc := blockCap(singleWriter)
	resp, err := f.cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "disk", VolumeCapabilities: []*csi.VolumeCapability{bc}})
	must.NoError(t, err)
	id := resp.Volume.VolumeId
	_, err = f.cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: f.cfg.NodeID, VolumeCapability: bc})
	must.NoError(t, err)
	target := filepath.Join(f.targets, "disk")
	_, err = f.ns.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: bc})
	must.NoError(t, err)
	dev := f.ns.volumeLoop(f.ns.store.current(), id)
	t.Cleanup(func() { _ = detachLoop(dev) })
	// The record now names a device that is another file's, as after a
	// reboot that gave the number to someone else.
	other := filepath.Join(t.TempDir(), "other.img")
	must.NoError(t, os.WriteFile(other, make([]byte, 1<<20), 0o600))
	otherDev, err := attachLoop(other)
	must.NoError(t, err)
	t.Cleanup(func() { _ = detachLoop(otherDev) })
	must.NoError(t, f.ns.store.update(func(st *state) error {
		st.Publishes[target].Loop = otherDev
		return nil
	}))
	_, err = f.ns.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	must.NoError(t, err)
	backing, err := loopBacking(otherDev)
	must.NoError(t, err)
	must.Eq(t, other, backing, must.Sprint("the other file's device is left attached"))
}
