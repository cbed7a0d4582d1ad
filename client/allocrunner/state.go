package allocrunner

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/berth-csi/berth/internal/atomicfile"
)

// allocState is what survives a client restart: the handle of each task
// that is running, by task name.
type allocState struct {
	Handles map[string]savedHandle
	// Fenceable is Runner.Fenceable, kept so that a client restarted while
	// cut off from the servers can fence the alloc before it has a runner.
	Fenceable bool `json:",omitempty"`
}

// stateStore keeps one alloc's state file; writes are atomic
// (atomicfile.Write).
type stateStore struct {
	path string

	mu    sync.Mutex
	state allocState
}

func openState(path string) (*stateStore, error) {
	s := &stateStore{path: path, state: allocState{Handles: map[string]savedHandle{}}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read alloc state: %w", err)
	}
	if err := json.Unmarshal(b, &s.state); err != nil {
		return nil, fmt.Errorf("alloc state %s is malformed: %w", path, err)
	}
	if s.state.Handles == nil {
		s.state.Handles = map[string]savedHandle{}
	}
	return s, nil
}

func (s *stateStore) handle(task string) (savedHandle, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.state.Handles[task]
	return h, ok
}

// handles are the recorded handles, by task.
func (s *stateStore) handles() map[string]savedHandle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.state.Handles)
}

// setFenceable records whether the alloc is fenceable; it is written with
// the next handle.
func (s *stateStore) setFenceable(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Fenceable = v
}

// setHandle records a running task's handle, or forgets it (nil).
func (s *stateStore) setHandle(task string, h *savedHandle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		if _, ok := s.state.Handles[task]; !ok {
			return nil
		}
		delete(s.state.Handles, task)
	} else {
		s.state.Handles[task] = *h
	}
	return s.writeLocked()
}

func (s *stateStore) writeLocked() error {
	b, err := json.Marshal(s.state)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("write alloc state: %w", err)
	}
	if err := atomicfile.Write(s.path, b); err != nil {
		return fmt.Errorf("write alloc state: %w", err)
	}
	return nil
}

// remove deletes the state file.
func (s *stateStore) remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
