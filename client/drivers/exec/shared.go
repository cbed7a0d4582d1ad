package exec

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// ShareDir makes dir a shared mount point in this (the host's) mount
// namespace: bound onto itself when it is not a mount point yet, then
// marked shared. It stays so (as kubelet's dir does): a plugin task
// stopping while another of the same plugin starts must not take the
// mount from under it. A task that binds it with bidirectional propagation then
// shares its mounts with the host: what a plugin task stages under it is
// seen by the host and by other tasks. Calling it again does nothing more.
func ShareDir(dir string) error {
	dir = filepath.Clean(dir)
	if err := bindSelf(dir); err != nil {
		return err
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("exec: make %s shared: %w", dir, err)
	}
	return nil
}

// bindSelf makes dir a mount point of its own, bound onto itself, unless
// it is one already.
func bindSelf(dir string) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	if !mounted {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("exec: bind %s onto itself: %w", dir, err)
		}
	}
	return nil
}
