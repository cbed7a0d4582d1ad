package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// mountFlagBits are the mount flags a bind mount can apply (with a
// remount); any other flag in a volume capability is INVALID_ARGUMENT.
var mountFlagBits = map[string]uintptr{
	"defaults":   0,
	"bind":       0,
	"rw":         0,
	"ro":         unix.MS_RDONLY,
	"nosuid":     unix.MS_NOSUID,
	"nodev":      unix.MS_NODEV,
	"noexec":     unix.MS_NOEXEC,
	"noatime":    unix.MS_NOATIME,
	"nodiratime": unix.MS_NODIRATIME,
	"relatime":   unix.MS_RELATIME,
}

func supportedMountFlags() string {
	return strings.Join(slices.Sorted(maps.Keys(mountFlagBits)), ", ")
}

// keptFlags maps statfs flags to the mount flags a bind remount must
// repeat: inside a user namespace the kernel locks nosuid, nodev, noexec
// and the atime flags of the source mount, and a remount that drops one
// fails with EPERM.
var keptFlags = []struct{ st, ms uintptr }{
	{unix.ST_NOSUID, unix.MS_NOSUID},
	{unix.ST_NODEV, unix.MS_NODEV},
	{unix.ST_NOEXEC, unix.MS_NOEXEC},
	{unix.ST_NOATIME, unix.MS_NOATIME},
	{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
	{unix.ST_RELATIME, unix.MS_RELATIME},
}

// bindMount mounts source on target (a directory, not a symlink to one:
// unmount never follows a link), then remounts it read-only and/or with
// flags when asked. On failure nothing stays mounted.
func bindMount(source, target string, readonly bool, flags []string) error {
	link, err := isSymlink(target)
	if err == nil && link {
		err = errSymlink
	}
	if err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", source, target, err)
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", source, target, err)
	}
	var extra uintptr
	for _, f := range flags {
		extra |= mountFlagBits[f]
	}
	if readonly {
		extra |= unix.MS_RDONLY
	}
	if extra == 0 {
		return nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(target, &fs); err != nil {
		_ = unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		return fmt.Errorf("statfs %s: %w", target, err)
	}
	for _, k := range keptFlags {
		if uintptr(fs.Flags)&k.st != 0 {
			extra |= k.ms
		}
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|extra, ""); err != nil {
		_ = unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		return fmt.Errorf("remount %s with %s: %w", target, describeFlags(readonly, flags), err)
	}
	return nil
}

func describeFlags(readonly bool, flags []string) string {
	if readonly {
		flags = append([]string{"ro"}, flags...)
	}
	return strings.Join(flags, ",")
}

// unmount removes every mount stacked on path; a path that is not a
// mount point (or does not exist) is fine. A symlink there is refused and
// never followed (UMOUNT_NOFOLLOW): this plugin mounts on directories
// only, so a link in place of one was put there since (a task that
// removed the mount point in its own namespace), and may point at a mount
// that is not this plugin's.
func unmount(path string) error {
	switch link, err := isSymlink(path); {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("unmount %s: %w", path, err)
	case link:
		return fmt.Errorf("unmount %s: %w", path, errSymlink)
	}
	for range 16 {
		mounted, err := isMountPoint(path)
		if err != nil || !mounted {
			return err
		}
		if err := unix.Unmount(path, unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still a mount point after 16 unmounts", path)
}

// errSymlink refuses a mount point that is a symlink.
var errSymlink = errors.New("it is a symlink, not a directory: refusing to follow it")

// isSymlink reports whether path is a symlink (its last element: a link
// in a parent directory is followed).
func isSymlink(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	return fi.Mode()&fs.ModeSymlink != 0, nil
}
