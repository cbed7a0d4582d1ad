package exec

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mountPoints lists the mount points of this thread's mount namespace
// that filter keeps (nil: all of them), in the order the kernel lists
// them in mountinfo, its escapes (\040 for a space, ...) undone.
func mountPoints(filter mountinfo.FilterFunc) ([]string, error) {
	infos, err := mountinfo.GetMounts(filter)
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	mps := make([]string, len(infos))
	for i, m := range infos {
		mps[i] = m.Mountpoint
	}
	return mps, nil
}

// isMountPoint reports whether path (clean and absolute, taken as it is:
// no symlink is resolved) is a mount point of this namespace.
func isMountPoint(path string) (bool, error) {
	mps, err := mountPoints(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return false, fmt.Errorf("is %s a mount point: %w", path, err)
	}
	return len(mps) > 0, nil
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// MountsUnder lists the mount points of this process's namespace strictly
// inside dir, deduplicated and sorted.
func MountsUnder(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	mps, err := mountPoints(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	mps = slices.DeleteFunc(mps, func(mp string) bool { return mp == dir })
	slices.Sort(mps)
	return slices.Compact(mps), nil
}

// DetachMountsUnder lazily unmounts every mount strictly inside dir except
// those in keep, deepest first: what a task mounted under a bidirectional
// volume, and the host received. It returns the mount points it detached.
func DetachMountsUnder(dir string, keep []string) ([]string, error) {
	mps, err := MountsUnder(dir)
	if err != nil {
		return nil, fmt.Errorf("exec: list mounts under %s: %w", dir, err)
	}
	var detached []string
	var errs []error
	for _, mp := range slices.Backward(mps) {
		if slices.Contains(keep, mp) {
			continue
		}
		n, err := detach(mp)
		for range n {
			detached = append(detached, mp)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return detached, errors.Join(errs...)
}

// detach lazily unmounts every mount stacked on mp (a mount point may
// carry several) and returns how many it took off. It never follows a
// symlink (UMOUNT_NOFOLLOW): a task that removed a mount point in its own
// namespace and left a link in its place, to a mount of the host's,
// gets nothing unmounted; a path that is no mount point (EINVAL), a link
// included, or is gone (ENOENT) is left as it is.
func detach(mp string) (int, error) {
	n := 0
	for range 16 {
		err := unix.Unmount(mp, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("exec: detach %s: %w", mp, err)
		}
		n++
	}
	return n, nil
}
