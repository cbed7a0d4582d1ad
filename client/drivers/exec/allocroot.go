package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// SecureAllocRoot makes dir (the client's DATA/alloc, which holds every
// allocation's dir) a mount of its own with nosuid and nodev: a setuid
// binary or a device node a task (a root container, where root tasks are
// allowed) leaves in its dirs gives nobody on the host anything, though
// host users may reach the dirs of tasks that run as other users. A dir
// that is a mount point already is only remounted. Needs root.
func SecureAllocRoot(dir string) error {
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	if err := bindSelf(dir); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_NOSUID | syscall.MS_NODEV)
	if err := syscall.Mount("", dir, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s nosuid,nodev: %w", dir, err)
	}
	return nil
}

// ReleaseAllocRoot takes SecureAllocRoot's mount away (the client is
// stopping; the next one makes it again). What is under it stays: the
// mount is the same dir's.
func ReleaseAllocRoot(dir string) error {
	dir = filepath.Clean(dir)
	mounted, err := isMountPoint(dir)
	if err != nil || !mounted {
		return err
	}
	// Never through a link put in its place (UMOUNT_NOFOLLOW).
	if err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
		return fmt.Errorf("exec: unmount %s: %w", dir, err)
	}
	return nil
}
