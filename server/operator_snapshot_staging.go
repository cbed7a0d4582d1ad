package server

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Operator snapshot files in transit on the leader: a save's file waiting
// to be read back (SnapshotRead), or a restore's file being uploaded
// (SnapshotUpload). Each is a file in <data_dir>/snapshot-staging (mode
// 0600: it holds the whole state) under a random handle. The file of a
// save goes once its last chunk is read; an upload's once it is restored
// or refused; either goes after snapshotStagedIdle unused (a caller that
// went away). The directory is emptied the first time this process stages
// a file: a crash leaves nothing behind for long.

const (
	snapshotStagingDir = "snapshot-staging"
	snapshotStagedIdle = 2 * time.Minute
)

// snapshotStage is the server's staged files. The zero value is ready.
type snapshotStage struct {
	once    sync.Once
	initErr error

	// saveMu makes one save at a time (raft makes one snapshot at a time
	// anyway), restoreMu one restore.
	saveMu    sync.Mutex
	restoreMu sync.Mutex

	mu    sync.Mutex
	files map[string]*stagedFile
	idle  time.Duration // snapshotStagedIdle unless a test sets it
}

// stagedFile is one file in transit.
type stagedFile struct {
	handle string
	path   string
	upload bool
	timer  *time.Timer

	mu   sync.Mutex // orders an upload's appends
	size int64
}

// snapshotDir returns the staging directory, emptied on first use.
func (s *Server) snapshotDir() (string, error) {
	st := &s.snapshots
	dir := filepath.Join(s.config.DataDir, snapshotStagingDir)
	st.once.Do(func() {
		if err := os.RemoveAll(dir); err != nil {
			st.initErr = err
			return
		}
		st.initErr = os.MkdirAll(dir, 0o700)
	})
	if st.initErr != nil {
		return "", structs.NewError(structs.CodeInternal, "operator snapshot: staging directory %s on server %s: %v", dir, s.config.NodeName, st.initErr)
	}
	return dir, nil
}

// stageFile creates an empty file to stage; the caller fills it and
// publishes it (publishStaged), or removes it.
func (s *Server) stageFile(upload bool) (*stagedFile, *os.File, error) {
	dir, err := s.snapshotDir()
	if err != nil {
		return nil, nil, err
	}
	handle := structs.NewUUID()
	path := filepath.Join(dir, handle)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, structs.NewError(structs.CodeInternal, "operator snapshot: stage a file on server %s: %v", s.config.NodeName, err)
	}
	return &stagedFile{handle: handle, path: path, upload: upload}, f, nil
}

// publishStaged makes a staged file reachable by its handle, until it is
// unused for the idle period. A save's file does not change once
// published.
func (s *Server) publishStaged(sf *stagedFile) {
	st := &s.snapshots
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.files == nil {
		st.files = map[string]*stagedFile{}
	}
	idle := st.idleTime()
	st.files[sf.handle] = sf
	sf.timer = time.AfterFunc(idle, func() {
		if s.unstage(sf) {
			s.logger.Warn("operator snapshot: staged file unused; removed", "handle", sf.handle, "idle", idle)
		}
	})
}

func (st *snapshotStage) idleTime() time.Duration {
	if st.idle == 0 {
		return snapshotStagedIdle
	}
	return st.idle
}

// staged returns the staged file handle, of the kind asked, and keeps it
// from expiring for another idle period.
func (s *Server) staged(handle string, upload bool) (*stagedFile, error) {
	st := &s.snapshots
	st.mu.Lock()
	sf, ok := st.files[handle]
	st.mu.Unlock()
	kind := "download"
	if upload {
		kind = "upload"
	}
	if !ok || sf.upload != upload {
		return nil, structs.NewError(structs.CodeNotFound,
			"operator snapshot: %s %q is not staged on server %s: it finished, was unused for %s, or the leader changed; start again",
			kind, handle, s.config.NodeName, snapshotStagedIdle)
	}
	sf.timer.Reset(st.idleTime())
	return sf, nil
}

// unstage forgets a staged file and removes it; false when it was not
// staged any more (finished, expired, or taken by a restore, which then
// owns the file).
func (s *Server) unstage(sf *stagedFile) bool {
	st := &s.snapshots
	st.mu.Lock()
	ours := st.files[sf.handle] == sf
	if ours {
		delete(st.files, sf.handle)
	}
	st.mu.Unlock()
	if !ours {
		return false
	}
	sf.timer.Stop()
	s.removeStaged(sf.path)
	return true
}

func (s *Server) removeStaged(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.logger.Warn("operator snapshot: remove staged file", "path", path, "error", err)
	}
}

// readStaged reads up to SnapshotChunkSize bytes of a save's file at
// offset; after the last chunk the file is unstaged.
func (s *Server) readStaged(handle string, offset int64) ([]byte, bool, error) {
	sf, err := s.staged(handle, false)
	if err != nil {
		return nil, false, err
	}
	if offset < 0 || offset > sf.size {
		return nil, false, structs.NewError(structs.CodeBadRequest,
			"operator snapshot: offset %d is outside the staged file of %d bytes", offset, sf.size)
	}
	f, err := os.Open(sf.path)
	if err != nil {
		return nil, false, structs.NewError(structs.CodeNotFound, "operator snapshot: staged file %q is gone: %v; start again", handle, err)
	}
	defer f.Close()
	buf := make([]byte, min(int64(structs.SnapshotChunkSize), sf.size-offset))
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, structs.NewError(structs.CodeInternal, "operator snapshot: read staged file: %v", err)
	}
	eof := offset+int64(len(buf)) == sf.size
	if eof {
		s.unstage(sf)
	}
	return buf, eof, nil
}

// appendStaged appends data at offset to an upload, starting one when
// handle is empty. Chunks come in order: offset is the size so far.
func (s *Server) appendStaged(handle string, offset int64, data []byte) (*stagedFile, error) {
	if len(data) == 0 || len(data) > structs.SnapshotChunkSize {
		return nil, structs.NewError(structs.CodeBadRequest,
			"operator snapshot: an upload chunk holds 1 to %d bytes, this one %d", structs.SnapshotChunkSize, len(data))
	}
	var (
		sf  *stagedFile
		f   *os.File
		err error
	)
	if handle == "" {
		if offset != 0 {
			return nil, structs.NewError(structs.CodeBadRequest, "operator snapshot: an upload starts at offset 0, not %d", offset)
		}
		if sf, f, err = s.stageFile(true); err != nil {
			return nil, err
		}
		s.publishStaged(sf)
	} else {
		if sf, err = s.staged(handle, true); err != nil {
			return nil, err
		}
		if f, err = os.OpenFile(sf.path, os.O_WRONLY, 0); err != nil {
			return nil, structs.NewError(structs.CodeNotFound, "operator snapshot: staged upload %q is gone: %v; start again", handle, err)
		}
	}
	defer f.Close()
	sf.mu.Lock()
	defer sf.mu.Unlock()
	switch {
	case offset != sf.size:
		return nil, structs.NewError(structs.CodeConflict,
			"operator snapshot: upload %q has %d bytes, a chunk for offset %d came; send the chunks in order", sf.handle, sf.size, offset)
	case sf.size+int64(len(data)) > structs.SnapshotMaxFileSize:
		s.unstage(sf)
		return nil, structs.NewError(structs.CodeBadRequest,
			"operator snapshot: the file is larger than %d bytes, the most a restore takes", structs.SnapshotMaxFileSize)
	}
	if _, err := f.WriteAt(data, offset); err != nil {
		s.unstage(sf)
		return nil, structs.NewError(structs.CodeInternal, "operator snapshot: write the upload on server %s: %v", s.config.NodeName, err)
	}
	sf.size += int64(len(data))
	return sf, nil
}

// takeUpload unstages a complete upload for a restore, which then owns
// (and removes) its file.
func (s *Server) takeUpload(handle string) (*stagedFile, error) {
	sf, err := s.staged(handle, true)
	if err != nil {
		return nil, err
	}
	sf.mu.Lock() // no append in flight
	defer sf.mu.Unlock()
	st := &s.snapshots
	st.mu.Lock()
	ours := st.files[sf.handle] == sf
	delete(st.files, sf.handle)
	st.mu.Unlock()
	if !ours {
		return nil, structs.NewError(structs.CodeNotFound,
			"operator snapshot: upload %q was restored or removed meanwhile; send the snapshot again", handle)
	}
	sf.timer.Stop()
	return sf, nil
}
