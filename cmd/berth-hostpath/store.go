package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Errors of the state file, for errors.Is.
var (
	errCorruptState = errors.New("hostpath: corrupt state file")
	errSaveState    = errors.New("hostpath: cannot save state file")
)

const stateFileName = "state.json"

// store keeps the state in memory and in <root>/state.json. Readers get an
// immutable *state; update applies a change to a copy, writes it to disk
// (temp file, fsync, rename) and only then makes it current, so a failed
// write leaves both the file and memory as they were. Instances on several
// nodes may share the root (store_shared.go).
type store struct {
	path string

	mu   sync.Mutex // guards cur, seen and the file
	cur  *state
	seen os.FileInfo // the file cur was read from or written as; nil if none
}

// openStore loads path, or starts empty when the file does not exist.
func openStore(path string) (*store, error) {
	st, fi, err := loadState(path)
	if err != nil {
		return nil, err
	}
	return &store{path: path, cur: st, seen: fi}, nil
}

// loadState reads the state file, and its FileInfo (nil when it does not
// exist: the state is empty).
func loadState(path string) (*state, os.FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("hostpath: read state file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("hostpath: read state file %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("hostpath: read state file %s: %w", path, err)
	}
	st, err := parseState(path, data)
	return st, fi, err
}

func parseState(path string, data []byte) (*state, error) {
	st := newState()
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%w %s: %v (move it away to start empty, or restore a backup)", errCorruptState, path, err)
	}
	// "volumes": null in the file decodes as a nil map
	if st.Volumes == nil {
		st.Volumes = map[string]*volume{}
	}
	if st.Snapshots == nil {
		st.Snapshots = map[string]*snapshot{}
	}
	if st.Stages == nil {
		st.Stages = map[string]*stageRecord{}
	}
	if st.Publishes == nil {
		st.Publishes = map[string]*publishRecord{}
	}
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("%w %s: %v (version %d, this plugin reads %d)", errCorruptState, path, err, st.Version, stateVersion)
	}
	return st, nil
}

// current returns the state, as the file holds it now (another instance
// sharing the root may have changed it); callers must not change it.
func (s *store) current() *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked(false) // on failure, the last state read stands
	return s.cur
}

// update runs fn on a copy of the state, as the file holds it under the
// root's lock, and saves the result. If fn or the save fails, nothing
// changes.
func (s *store) update(fn func(*state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockRoot(s.path)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.refreshLocked(true); err != nil {
		return err
	}
	next := s.cur.copy()
	if err := fn(next); err != nil {
		return err
	}
	if err := writeState(s.path, next); err != nil {
		return err
	}
	s.cur = next
	if fi, err := os.Stat(s.path); err == nil {
		s.seen = fi
	}
	return nil
}

// writeState replaces path atomically.
func writeState(path string, st *state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %v", errSaveState, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".state-*.tmp")
	if err != nil {
		return fmt.Errorf("%w %s: %v", errSaveState, path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this is a no-op
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("%w %s: %v", errSaveState, path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%w %s: %v", errSaveState, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%w %s: %v", errSaveState, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%w %s: %v", errSaveState, path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}
