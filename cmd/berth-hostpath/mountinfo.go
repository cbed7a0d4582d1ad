package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
)

// isMountPoint reports whether path is a mount point, by looking for it
// in this process's mountinfo (a bind mount of a directory on the same
// filesystem has the same device as its parent, so stat cannot tell). A
// path that is itself a symlink is refused (errSymlink): a link planted
// in place of a target would otherwise pass for the mount point it names;
// links in its parents (the operator's dirs) are resolved. A path that
// does not exist is not a mount point.
func isMountPoint(path string) (bool, error) {
	link, err := isSymlink(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case link:
		return false, fmt.Errorf("is %s a mount point: %w", path, errSymlink)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(filepath.Clean(resolved)))
	if err != nil {
		return false, fmt.Errorf("is %s a mount point: read mountinfo: %w", path, err)
	}
	return len(infos) > 0, nil
}
