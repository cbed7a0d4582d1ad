package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A root may be shared by instances of the plugin on several nodes: a
// network filesystem mounted on each, or one directory on a machine that
// runs several clients (berth's process tests). Give them no -topology,
// so a volume is reachable from every node, and -disable-attach, since an
// instance controller-publishes to its own node only.
//
// Each change is made under an exclusive flock of the root directory, on
// the state as the file holds it then (read afresh); every read first
// picks up what another instance wrote (the file is replaced by a rename,
// never rewritten in place, so another inode, size or time says it
// changed). Each change is atomic across instances; a call's look before
// its change is not, so two instances must not work on one volume at once
// (berth, which serialises a volume's claims, does not).

// refreshLocked reloads the state when the file is not the one last read
// or written, or always when force (under the root's lock, before a
// change: an inode number can be reused, so a file that looks the same
// may not be). s.mu is held.
func (s *store) refreshLocked(force bool) error {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // never written: the state in memory stands
	}
	if err != nil {
		return fmt.Errorf("hostpath: read state file %s: %w", s.path, err)
	}
	if !force && sameVersion(s.seen, fi) {
		return nil
	}
	st, read, err := loadState(s.path)
	if err != nil {
		return err
	}
	s.cur, s.seen = st, read
	return nil
}

// sameVersion reports whether b looks like the file a was: the same
// inode, size and modification time.
func sameVersion(a, b os.FileInfo) bool {
	return a != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// lockRoot takes the exclusive lock of the root, the directory that holds
// the state file path (a lock of its own, not of a file in it, so the
// root holds nothing more); unlock releases it.
func lockRoot(path string) (unlock func(), err error) {
	name := filepath.Dir(path)
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: lock %s: %v", errSaveState, name, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: lock %s: %v", errSaveState, name, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
