package structs

import "time"

// The operator snapshot (berth operator snapshot save|restore): a raft
// snapshot of every state table, with its metadata and checksums, in one
// file (server/snapshotfile). A file travels between the HTTP API and the
// leader in chunks, so that no RPC frame holds a whole snapshot: a save is
// staged on the leader and read back chunk by chunk; a restore is uploaded
// chunk by chunk, then restored. Every request is a WriteRequest so that it
// reaches the leader, where the staged file is, whichever server or client
// agent the caller reached.

const (
	// SnapshotChunkSize is the most bytes one SnapshotRead answer or one
	// SnapshotUpload request carries.
	SnapshotChunkSize = 4 << 20
	// SnapshotMaxFileSize bounds the snapshot file a restore accepts.
	SnapshotMaxFileSize int64 = 1 << 30
)

// SnapshotMeta describes the state an operator snapshot file holds.
type SnapshotMeta struct {
	// Format is the file's layout version (snapshotfile.Format).
	Format int
	// ID is the raft snapshot's ID on the server that took it.
	ID string
	// Index and Term are those of the last raft entry the state includes.
	Index uint64
	Term  uint64
	// RaftVersion is hashicorp/raft's snapshot version of the state.
	RaftVersion int
	// Size is the length in bytes of the state (the FSM's snapshot stream).
	Size int64
	// CreateTime is when the snapshot was saved, by the leader's clock.
	CreateTime time.Time
}

// SnapshotTableCount is how many rows of one state table a snapshot holds.
type SnapshotTableCount struct {
	Table string
	Rows  int
}

// SnapshotSaveRequest asks the leader to take a raft snapshot and stage it
// as a snapshot file; SnapshotRead hands the file out.
type SnapshotSaveRequest struct {
	WriteRequest
}

// SnapshotSaveResponse names the staged file (Handle) and says how long it
// is. Index is the snapshot's raft index.
type SnapshotSaveResponse struct {
	Handle string
	Size   int64
	Meta   *SnapshotMeta
	WriteMeta
}

// SnapshotReadRequest reads the staged file Handle from Offset.
type SnapshotReadRequest struct {
	Handle string
	Offset int64
	WriteRequest
}

// SnapshotReadResponse is at most SnapshotChunkSize bytes of the file; EOF
// says they are the last ones (the leader then drops the staged file).
type SnapshotReadResponse struct {
	Data []byte
	EOF  bool
}

// SnapshotUploadRequest appends Data, at Offset, to the upload Handle; an
// empty Handle starts an upload (Offset 0).
type SnapshotUploadRequest struct {
	Handle string
	Offset int64
	Data   []byte
	WriteRequest
}

// SnapshotUploadResponse names the upload and how many bytes it holds.
type SnapshotUploadResponse struct {
	Handle string
	Size   int64
}

// SnapshotRestoreRequest restores the uploaded file Handle: the leader
// checks it whole, then hands its state to raft, which installs it on
// every server.
type SnapshotRestoreRequest struct {
	Handle string
	WriteRequest
}

// SnapshotRestoreResponse says what was restored: the file's metadata, the
// rows of each table, and the root keys the restored state names whose
// material no server of the cluster holds (volume secrets sealed under
// them cannot be opened until a server holding the key's file joins).
// Index is the raft index the cluster restored at.
type SnapshotRestoreResponse struct {
	Meta            *SnapshotMeta
	Tables          []*SnapshotTableCount
	MissingRootKeys []string
	WriteMeta
}
