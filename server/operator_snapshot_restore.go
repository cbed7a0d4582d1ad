package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/structs"
)

// snapshotRestoreTimeout bounds how long a restore waits for raft to take
// it (raft.Restore's enqueue timeout).
const snapshotRestoreTimeout = time.Minute

// restoreSnapshot checks the uploaded file sf whole, then hands its state
// to raft.Restore: the leader installs it in its FSM, and the followers,
// past a hole in the log, get it by InstallSnapshot. Nothing in the
// cluster changes unless every check passes: a file that is cut short,
// fails its checksums, is of another kind or format, or holds a state the
// FSM would refuse is a BadRequest saying so. raft's Restore must not fail
// in the leader's FSM (raft panics), hence the FSM's own decode first.
func (s *Server) restoreSnapshot(sf *stagedFile, reply *structs.SnapshotRestoreResponse) error {
	s.snapshots.restoreMu.Lock()
	defer s.snapshots.restoreMu.Unlock()

	dir, err := s.snapshotDir()
	if err != nil {
		return err
	}
	in, err := os.Open(sf.path)
	if err != nil {
		return structs.NewError(structs.CodeInternal, "operator snapshot: open the upload on server %s: %v", s.config.NodeName, err)
	}
	defer in.Close()
	state, err := os.CreateTemp(dir, "restore-*.state")
	if err != nil {
		return structs.NewError(structs.CodeInternal, "operator snapshot: stage the state on server %s: %v", s.config.NodeName, err)
	}
	defer s.removeStaged(state.Name())
	defer state.Close()

	bw := bufio.NewWriter(state)
	meta, err := snapshotfile.Read(in, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return refusedSnapshot(err)
	}
	if v := raft.SnapshotVersion(meta.RaftVersion); v < raft.SnapshotVersionMin || v > raft.SnapshotVersionMax {
		return structs.NewError(structs.CodeBadRequest,
			"operator snapshot: the file's raft snapshot version %d is not one this version reads (%d to %d); nothing was changed",
			meta.RaftVersion, raft.SnapshotVersionMin, raft.SnapshotVersionMax)
	}
	info, err := inspectState(state)
	if err != nil {
		return structs.NewError(structs.CodeBadRequest,
			"operator snapshot: the file's checksums hold, but its state is not one this version can restore: %v; nothing was changed", err)
	}
	if _, err := state.Seek(0, io.SeekStart); err != nil {
		return structs.NewError(structs.CodeInternal, "operator snapshot: rewind the state: %v", err)
	}

	rmeta := &raft.SnapshotMeta{Version: raft.SnapshotVersion(meta.RaftVersion), ID: meta.ID,
		Index: meta.Index, Term: meta.Term, Size: meta.Size}
	s.logger.Warn("operator snapshot: restoring; the cluster's state is replaced", "index", meta.Index, "term", meta.Term,
		"saved", meta.CreateTime, "bytes", meta.Size)
	// No first root key may be in the making meanwhile (a new leader's
	// initRootKey): its metadata would land after the restore and demote
	// the snapshot's active key. Once the restore is in, ensureRootKey
	// finds the snapshot's key.
	s.keys.initMu.Lock()
	err = s.raft.Restore(rmeta, bufio.NewReader(state), snapshotRestoreTimeout)
	s.keys.initMu.Unlock()
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return structs.NewError(structs.CodeUnavailable, "operator snapshot: server %s is not the leader any more; nothing was changed: retry", s.config.NodeName)
		}
		return structs.NewError(structs.CodeIndeterminate,
			"operator snapshot: restore on server %s failed: %v; the cluster may hold the snapshot's state or its own: check it, and restore again", s.config.NodeName, err)
	}
	reply.Index = s.raft.LastIndex()
	reply.Meta, reply.Tables = meta, info.Tables
	reply.MissingRootKeys = s.afterSnapshotRestore()
	s.logger.Warn("operator snapshot: restored", "snapshot_index", meta.Index, "raft_index", reply.Index,
		"missing_root_keys", len(reply.MissingRootKeys))
	return nil
}

// inspectState decodes the state as the FSM's Restore will.
func inspectState(f *os.File) (*fsm.SnapshotInfo, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return fsm.InspectSnapshot(bufio.NewReader(f))
}

// refusedSnapshot is the BadRequest of a file snapshotfile refused.
func refusedSnapshot(err error) error {
	what := "it cannot be read"
	switch {
	case errors.Is(err, snapshotfile.ErrNotSnapshot):
		what = "it is not a berth snapshot file"
	case errors.Is(err, snapshotfile.ErrCorrupt):
		what = "it is cut short or damaged"
	case errors.Is(err, snapshotfile.ErrChecksum):
		what = "its checksums do not match its content"
	case errors.Is(err, snapshotfile.ErrFormat):
		what = "its format is not one this version reads"
	}
	return structs.NewError(structs.CodeBadRequest, "operator snapshot: the file is refused: %s (%v); nothing was changed", what, err)
}

// afterSnapshotRestore redoes the leader's own work that hangs on the
// state a restore replaced, as Consul's and Nomad's leaders reassert
// theirs: heartbeat timers for the restored nodes (a node whose client
// never heartbeats to this cluster goes down after its TTL), this
// leader's token (the restored one is another leader's), the first root
// key when the snapshot has none (and the sealing of secrets an older
// version stored in clear), and compiled ACLs. The watchers (claim
// release, jobs, keys, blocking queries) see the new store by its
// AbandonCh. It returns the restored root keys whose material neither
// this server nor any other of the cluster holds.
func (s *Server) afterSnapshotRestore() []string {
	s.acls.mu.Lock()
	s.acls.entries = nil
	s.acls.mu.Unlock()
	if err := s.armHeartbeats(false); err != nil {
		s.logger.Error("operator snapshot: arm heartbeat timers of the restored nodes", "error", err)
	}
	s.establishLeaderToken(s.ctx)
	if err := s.ensureRootKey(); err != nil {
		s.logger.Error("operator snapshot: make a root key", "error", err)
	} else if n, err := s.rekeyVolumes(s.ctx, false); err != nil {
		s.logger.Error("operator snapshot: seal restored volume secrets stored in clear", "error", err)
	} else if n > 0 {
		s.logger.Info("operator snapshot: sealed restored volume secrets stored in clear", "volumes", n)
	}
	s.kickKeyReplication()
	keys, err := s.State().RootKeyMetas(nil)
	if err != nil {
		s.logger.Error("operator snapshot: read the restored root keys", "error", err)
		return nil
	}
	var missing []string
	for _, k := range keys {
		if s.keys.ring.Has(k.KeyID) {
			continue
		}
		// Another server of this cluster may hold it (its keystore was
		// copied from the snapshot's cluster): fetch it now, as the
		// replicator would, so that only keys no server has are told.
		if _, err := s.fetchKey(k.KeyID); err != nil {
			missing = append(missing, k.KeyID)
		}
	}
	if len(missing) > 0 {
		s.logger.Warn("operator snapshot: the restored state names root keys no server of this cluster holds; "+
			"volume secrets sealed under them cannot be opened until a server with the keys' files joins",
			"key_ids", fmt.Sprint(missing))
	}
	return missing
}
