package server

import (
	"errors"
	"os"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/structs"
)

// The operator snapshot endpoints (berth operator snapshot save|restore,
// GET and PUT /v1/operator/snapshot). Every one is forwarded to the
// leader, where the files in transit are staged (operator_snapshot_staging.go),
// and needs a management token: a snapshot is the whole state, ACL tokens'
// hashes and sealed volume secrets included, and a restore replaces it.
//
// Save takes a raft snapshot (raft.Snapshot, as Consul and Nomad do) and
// wraps its state, as the FSM persisted it, with its metadata and
// checksums (server/snapshotfile). Restore checks an uploaded file whole
// before it touches the cluster (operator_snapshot_restore.go).

// SnapshotSave stages a snapshot file of the state as of now on the
// leader; SnapshotRead hands it out.
func (op *Operator) SnapshotSave(args *structs.SnapshotSaveRequest, reply *structs.SnapshotSaveResponse) error {
	s := op.srv
	sf, meta, err := s.saveSnapshot()
	if err != nil {
		return err
	}
	reply.Handle, reply.Size, reply.Meta, reply.Index = sf.handle, sf.size, meta, meta.Index
	s.logger.Info("operator snapshot: saved", "index", meta.Index, "term", meta.Term, "bytes", sf.size)
	return nil
}

// SnapshotRead returns the next chunk of a staged snapshot file.
func (op *Operator) SnapshotRead(args *structs.SnapshotReadRequest, reply *structs.SnapshotReadResponse) error {
	s := op.srv
	data, eof, err := s.readStaged(args.Handle, args.Offset)
	if err != nil {
		return err
	}
	reply.Data, reply.EOF = data, eof
	return nil
}

// SnapshotUpload appends a chunk of a snapshot file to restore.
func (op *Operator) SnapshotUpload(args *structs.SnapshotUploadRequest, reply *structs.SnapshotUploadResponse) error {
	s := op.srv
	sf, err := s.appendStaged(args.Handle, args.Offset, args.Data)
	if err != nil {
		return err
	}
	reply.Handle, reply.Size = sf.handle, sf.size
	return nil
}

// SnapshotRestore restores an uploaded snapshot file on every server.
func (op *Operator) SnapshotRestore(args *structs.SnapshotRestoreRequest, reply *structs.SnapshotRestoreResponse) error {
	s := op.srv
	sf, err := s.takeUpload(args.Handle)
	if err != nil {
		return err
	}
	defer s.removeStaged(sf.path)
	return s.restoreSnapshot(sf, reply)
}

// saveSnapshot takes a raft snapshot and stages it as a snapshot file.
func (s *Server) saveSnapshot() (*stagedFile, *structs.SnapshotMeta, error) {
	s.snapshots.saveMu.Lock()
	defer s.snapshots.saveMu.Unlock()
	future := s.raft.Snapshot()
	if err := future.Error(); err != nil && !errors.Is(err, raft.ErrRaftShutdown) {
		// raft snapshots only at an index its FSM applied: it refuses when
		// the FSM has applied nothing (ErrNothingNewToSnapshot), or while
		// its newest configuration entry is past the last command applied
		// (a server joined an idle cluster). One more command cures both.
		s.logger.Debug("operator snapshot: raft refused a snapshot; applying a command first", "error", err)
		if err := s.applySnapshotNudge(); err != nil {
			return nil, nil, err
		}
		future = s.raft.Snapshot()
	}
	if err := future.Error(); err != nil {
		return nil, nil, raftSnapshotError(s, "take a raft snapshot", err)
	}
	rmeta, rc, err := future.Open()
	if err != nil {
		return nil, nil, raftSnapshotError(s, "open the raft snapshot", err)
	}
	defer rc.Close()

	sf, f, err := s.stageFile(false)
	if err != nil {
		return nil, nil, err
	}
	meta := structs.SnapshotMeta{ID: rmeta.ID, Index: rmeta.Index, Term: rmeta.Term, RaftVersion: int(rmeta.Version),
		Size: rmeta.Size, CreateTime: time.Now().UTC()}
	err = snapshotfile.Write(f, meta, rc)
	var size int64
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.removeStaged(sf.path)
		return nil, nil, structs.NewError(structs.CodeInternal, "operator snapshot: write the snapshot file on server %s: %v", s.config.NodeName, err)
	}
	sf.size = size
	meta.Format = snapshotfile.Format
	s.publishStaged(sf)
	return sf, &meta, nil
}

// applySnapshotNudge applies a command that changes nothing: an empty
// root key upsert, which every FSM refuses alike (BadRequest, pinned by
// fsm's golden root_keys scenario) and which writes no row, yet is a
// command applied at a new index, past any configuration entry.
func (s *Server) applySnapshotNudge() error {
	_, _, err := raftApply[any](s, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{})
	if err == nil || errors.Is(err, structs.ErrBadRequest) {
		return nil
	}
	return err
}

// raftSnapshotError codes a raft failure: one that ends with this
// server's leadership or life may be retried elsewhere.
func raftSnapshotError(s *Server, doing string, err error) error {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return structs.NewError(structs.CodeUnavailable, "operator snapshot: %s on server %s: %v; retry", doing, s.config.NodeName, err)
	}
	return structs.NewError(structs.CodeInternal, "operator snapshot: %s on server %s: %v", doing, s.config.NodeName, err)
}
