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
// symlink in path is resolved; a path that does not exist is not a mount
// point.
func isMountPoint(path string) (bool, error) {
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
