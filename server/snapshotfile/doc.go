// Package snapshotfile writes and reads the operator snapshot file (berth
// operator snapshot save|restore|inspect): a gzip'd tar, built with the
// standard library's archive/tar, compress/gzip and crypto/sha256, of three
// entries in this order:
//
//   - meta.json: the structs.SnapshotMeta (format version, raft index and
//     term, the state's length, when it was saved);
//   - state.bin: the FSM's snapshot stream as raft persisted it (fsm
//     decodes it);
//   - SHA256SUMS: the SHA-256 of meta.json and state.bin, in sha256sum's
//     format, so `tar xzf FILE && sha256sum -c SHA256SUMS` checks an
//     extracted copy too.
//
// Read checks everything while it reads (the layout, the format version,
// the state's length, the gzip CRC, both checksums) and names what is
// wrong with a sentinel error: ErrNotSnapshot (another kind of file),
// ErrCorrupt (cut short or damaged), ErrChecksum, ErrFormat. A caller uses
// the state it copied out only when Read returns no error.
//
// The file holds what the state tables hold: root keys' metadata only
// (their material stays in the servers' keystores), volume secrets sealed
// under a root key, and ACL tokens' and node secrets' SHA-256 only.
//
// Imports: the standard library and structs only.
//
// Concurrency: the functions keep no state; each call owns its streams.
package snapshotfile
