package exec

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
)

// ShareDir makes dir a shared mount point in this (the host's) mount
// namespace: bound onto itself when it is not a mount point yet, then
// marked shared. A task that binds it with bidirectional propagation then
// shares its mounts with the host: what a plugin task stages under it is
// seen by the host and by other tasks. Calling it again does nothing more.
func ShareDir(dir string) error {
	dir = filepath.Clean(dir)
	mps, err := mountPoints()
	if err != nil {
		return fmt.Errorf("exec: list mounts: %w", err)
	}
	if !slices.Contains(mps, dir) {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("exec: bind %s onto itself: %w", dir, err)
		}
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("exec: make %s shared: %w", dir, err)
	}
	return nil
}

// UnshareDir undoes ShareDir once nothing is mounted under dir, and
// reports whether it did: while volumes are staged under it, it stays.
func UnshareDir(dir string) (bool, error) {
	dir = filepath.Clean(dir)
	under, err := MountsUnder(dir)
	if err != nil {
		return false, fmt.Errorf("exec: list mounts under %s: %w", dir, err)
	}
	if len(under) > 0 {
		return false, nil
	}
	mps, err := mountPoints()
	if err != nil {
		return false, fmt.Errorf("exec: list mounts: %w", err)
	}
	if !slices.Contains(mps, dir) {
		return true, nil
	}
	err = syscall.Unmount(dir, syscall.MNT_DETACH|umountNoFollow)
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		return false, fmt.Errorf("exec: unmount %s: %w", dir, err)
	}
	return true, nil
}
