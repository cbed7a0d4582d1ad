package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A block volume is a sparse file, volumes/<id>/disk.img, of the volume's
// capacity. A node that stages it (or, under -disable-stage, publishes it)
// attaches the file to a loop device, as csi-driver-host-path does; a
// publish makes the target a block device node of that loop device
// (mknod, mode 0660, so that the node is the plugin's own and the host's
// /dev/loopN is never changed); the last unstage or unpublish detaches it.
// Loop devices are set up with the loop ioctls (golang.org/x/sys/unix),
// so the plugin needs no losetup binary.

// blockImageName is the file of a block volume in its directory.
const blockImageName = "disk.img"

// defaultBlockBytes is the size of a block volume created without a
// capacity: a block device needs one.
const defaultBlockBytes = 64 << 20

// isBlock reports whether a capability asks for a block device.
func isBlock(c *csi.VolumeCapability) bool { return c.GetBlock() != nil }

// checkAccessType refuses a capability of the other access type than the
// volume's: a directory is never a block device, nor an image a mount.
func checkAccessType(v *volume, c *csi.VolumeCapability) error {
	switch {
	case v.Block && !isBlock(c):
		return fmt.Errorf("volume %s is a block volume; use the block access type", v.ID)
	case !v.Block && isBlock(c):
		return fmt.Errorf("volume %s is a directory (mount access type); it cannot be used as a block device", v.ID)
	}
	return nil
}

// blockOf says whether a list of capabilities asks for a block volume;
// mixing the access types is an error.
func blockOf(caps []*csi.VolumeCapability) (bool, error) {
	blocks := 0
	for _, c := range caps {
		if isBlock(c) {
			blocks++
		}
	}
	if blocks > 0 && blocks < len(caps) {
		return false, errors.New("volume_capabilities mix the block and mount access types; a berth-hostpath volume is one or the other")
	}
	return blocks > 0, nil
}

// blockImage is a block volume's file.
func (d *driver) blockImage(id string) string {
	return filepath.Join(d.volumeDir(id), blockImageName)
}

// makeBlockImage creates a sparse image of size bytes in dir.
func makeBlockImage(dir string, size int64) error {
	f, err := os.OpenFile(filepath.Join(dir, blockImageName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// growBlockImage grows a block volume's image to size (never shrinks).
func (d *driver) growBlockImage(id string, size int64) error {
	f, err := os.OpenFile(d.blockImage(id), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= size {
		return nil
	}
	return f.Truncate(size)
}

// attachLoop attaches file to a free loop device and returns its path.
// A device taken by another between the query and the attach is skipped.
func attachLoop(file string) (string, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open /dev/loop-control: %w", err)
	}
	defer ctl.Close()
	img, err := os.OpenFile(file, os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer img.Close()
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lf, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := &unix.LoopConfig{Fd: uint32(img.Fd())}
		copy(cfg.Info.File_name[:], file)
		err = unix.IoctlLoopConfigure(int(lf.Fd()), cfg)
		lf.Close()
		if errors.Is(err, unix.EBUSY) {
			continue // taken meanwhile
		}
		if err != nil {
			return "", fmt.Errorf("attach %s to %s: %w", file, dev, err)
		}
		return dev, nil
	}
	return "", fmt.Errorf("attach %s: every free loop device was taken before it could be used", file)
}

// loopBacking is the file a loop device is attached to, "" when none.
func loopBacking(dev string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// detachLoop detaches a loop device; one already detached is fine.
func detachLoop(dev string) error {
	lf, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// refreshLoop makes a loop device see its file's new size.
func refreshLoop(dev string) error {
	lf, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("refresh the size of %s: %w", dev, err)
	}
	return nil
}

// volumeLoop is the loop device the node records hold for a volume, if
// it is still attached to the volume's image; "" when none is.
func (d *driver) volumeLoop(st *state, id string) string {
	var devs []string
	for _, r := range st.Stages {
		if r.VolumeID == id && r.Loop != "" {
			devs = append(devs, r.Loop)
		}
	}
	for _, r := range st.Publishes {
		if r.VolumeID == id && r.Loop != "" {
			devs = append(devs, r.Loop)
		}
	}
	for _, dev := range devs {
		if b, err := loopBacking(dev); err == nil && b == d.blockImage(id) {
			return dev
		}
	}
	return ""
}

// ensureLoop returns the volume's loop device, attaching one if none is.
func (d *driver) ensureLoop(st *state, id string) (string, error) {
	if dev := d.volumeLoop(st, id); dev != "" {
		return dev, nil
	}
	return attachLoop(d.blockImage(id))
}

// releaseLoop detaches dev, the volume's loop device as a record has it,
// unless a record other than the one being dropped still uses it, or the
// device is no longer the volume's (a reboot since: the number may be
// another volume's now, which must not be torn down).
func (d *driver) releaseLoop(st *state, id, dev string, keepers int) error {
	if dev == "" {
		return nil
	}
	if b, err := loopBacking(dev); err != nil || b != d.blockImage(id) {
		return err // not attached, or not to this volume: nothing of ours to detach
	}
	users := 0
	for _, r := range st.Stages {
		if r.Loop == dev {
			users++
		}
	}
	for _, r := range st.Publishes {
		if r.Loop == dev {
			users++
		}
	}
	if users > keepers {
		return nil
	}
	return detachLoop(dev)
}

// makeBlockTarget makes target a block device node of dev (mode 0660,
// 0440 read-only; root's), or accepts one that is already that node.
func makeBlockTarget(target, dev string, readonly bool) error {
	var ds unix.Stat_t
	if err := unix.Stat(dev, &ds); err != nil {
		return fmt.Errorf("stat %s: %w", dev, err)
	}
	var ts unix.Stat_t
	err := unix.Lstat(target, &ts)
	switch {
	case err == nil && ts.Mode&unix.S_IFMT == unix.S_IFBLK && ts.Rdev == ds.Rdev:
		return nil
	case err == nil:
		return fmt.Errorf("target %s exists and is not the volume's device node", target)
	case !errors.Is(err, unix.ENOENT):
		return err
	}
	mode := uint32(0o660)
	if readonly {
		mode = 0o440
	}
	if err := unix.Mknod(target, unix.S_IFBLK|mode, int(ds.Rdev)); err != nil {
		return fmt.Errorf("make the device node %s: %w", target, err)
	}
	return unix.Chmod(target, mode) // whatever the umask
}

// blockInPlace checks that path is a device node of the volume's
// attached loop device: what a stats, expand or health call on a block
// volume needs.
func (d *driver) blockInPlace(st *state, id, path string) error {
	dev := d.volumeLoop(st, id)
	if dev == "" {
		return fmt.Errorf("volume %s is not attached to a loop device on this node", id)
	}
	if _, staged := st.Stages[path]; staged {
		return nil // the staging dir of a block volume holds nothing
	}
	var ds, ps unix.Stat_t
	if err := unix.Stat(dev, &ds); err != nil {
		return err
	}
	if err := unix.Lstat(path, &ps); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if ps.Mode&unix.S_IFMT != unix.S_IFBLK || ps.Rdev != ds.Rdev {
		return fmt.Errorf("%s is not the device node of volume %s", path, id)
	}
	return nil
}

// accessTypeName names a volume's kind.
func accessTypeName(block bool) string {
	if block {
		return "block"
	}
	return "mount"
}

// inPlace returns NOT_FOUND unless the volume exists and is staged or
// published at path, and there now: mounted for a directory (mountedAt),
// the device node of its attached loop device for a block volume.
func (d *driver) inPlace(st *state, id, path string) error {
	v, ok := st.Volumes[id]
	if !ok || !v.Block {
		return mountedAt(st, id, path)
	}
	p := filepath.Clean(path)
	stage, staged := st.Stages[p]
	pub, published := st.Publishes[p]
	if !(staged && stage.VolumeID == id) && !(published && pub.VolumeID == id) {
		return status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", id, path)
	}
	if err := d.blockInPlace(st, id, p); err != nil {
		return status.Errorf(codes.NotFound, "volume %s is recorded at %s but not there: %v", id, path, err)
	}
	return nil
}

// blockUsage is a block volume's bytes: its capacity, and what its image
// holds (the blocks allocated in the sparse file).
func (d *driver) blockUsage(v *volume) (*csi.VolumeUsage, error) {
	var st unix.Stat_t
	if err := unix.Stat(d.blockImage(v.ID), &st); err != nil {
		return nil, err
	}
	used := min(st.Blocks*512, v.CapacityBytes)
	return &csi.VolumeUsage{Unit: csi.VolumeUsage_BYTES, Total: v.CapacityBytes, Used: used, Available: v.CapacityBytes - used}, nil
}
