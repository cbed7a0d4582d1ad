package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// SnapshotType tags each record of a snapshot stream. The numbers are
// persisted in snapshot files: append only; never renumber or reuse.
type SnapshotType uint8

const (
	IndexSnapshot      SnapshotType = 0
	NodeSnapshot       SnapshotType = 1
	JobSnapshot        SnapshotType = 2
	AllocSnapshot      SnapshotType = 3
	CSIPluginSnapshot  SnapshotType = 4
	CSIVolumeSnapshot  SnapshotType = 5
	RootKeySnapshot    SnapshotType = 6
	ACLPolicySnapshot  SnapshotType = 7
	ACLTokenSnapshot   SnapshotType = 8
	JobVersionSnapshot SnapshotType = 9
)

// snapshotFormat is written first in every snapshot; a reader refuses a
// format it does not know rather than misreading it.
const snapshotFormat uint8 = 1

// snapshotTable ties a record type to its table and the Go type its rows
// decode into.
type snapshotTable struct {
	typ   SnapshotType
	table string
	new   func() any
}

// snapshotTables is the one ordered list persist and restore loop over.
var snapshotTables = []snapshotTable{
	{IndexSnapshot, state.TableIndex, func() any { return new(state.IndexEntry) }},
	{NodeSnapshot, state.TableNodes, func() any { return new(structs.Node) }},
	{JobSnapshot, state.TableJobs, func() any { return new(structs.Job) }},
	{AllocSnapshot, state.TableAllocs, func() any { return new(structs.Allocation) }},
	{CSIPluginSnapshot, state.TableCSIPlugins, func() any { return new(structs.CSIPlugin) }},
	{CSIVolumeSnapshot, state.TableCSIVolumes, func() any { return new(structs.CSIVolume) }},
	{RootKeySnapshot, state.TableRootKeys, func() any { return new(structs.RootKeyMeta) }},
	{ACLPolicySnapshot, state.TableACLPolicies, func() any { return new(structs.ACLPolicy) }},
	{ACLTokenSnapshot, state.TableACLTokens, func() any { return new(structs.ACLToken) }},
	{JobVersionSnapshot, state.TableJobVersions, func() any { return new(structs.Job) }},
}

func tableForType(t SnapshotType) (snapshotTable, bool) {
	for _, st := range snapshotTables {
		if st.typ == t {
			return st, true
		}
	}
	return snapshotTable{}, false
}

// Snapshot captures the state at the last applied index. Persist runs
// concurrently with further Apply calls, on the captured memdb snapshot.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return &fsmSnapshot{snap: snap}, nil
}

type fsmSnapshot struct {
	snap *state.StateSnapshot
}

var _ raft.FSMSnapshot = (*fsmSnapshot)(nil)

// Persist writes the format byte, then every row of every table as a
// record type byte followed by the row in msgpack.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.persist(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) persist(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := codec.NewEncoder(bw, structs.MsgpackHandle)
	if err := enc.Encode(snapshotFormat); err != nil {
		return fmt.Errorf("fsm: persist header: %w", err)
	}
	for _, t := range snapshotTables {
		iter, err := s.snap.TableRows(t.table)
		if err != nil {
			return fmt.Errorf("fsm: persist %s: %w", t.table, err)
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if err := enc.Encode(uint8(t.typ)); err != nil {
				return fmt.Errorf("fsm: persist %s: %w", t.table, err)
			}
			if err := enc.Encode(raw); err != nil {
				return fmt.Errorf("fsm: persist %s row: %w", t.table, err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("fsm: persist flush: %w", err)
	}
	return nil
}

// Release is a no-op: the memdb snapshot needs no cleanup.
func (s *fsmSnapshot) Release() {}

// Restore replaces the state with the snapshot's. The new store is built
// aside and swapped in only when the whole stream has been read, so a
// broken snapshot leaves the current state as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := restoreState(rc)
	if err != nil {
		return err
	}
	st.SetEventSink(f.events)
	f.mu.Lock()
	old := f.state
	f.state = st
	f.mu.Unlock()
	old.Abandon()
	idx, err := st.LatestIndex()
	if err == nil {
		f.setApplied(idx)
	}
	f.events.Restore(idx) // 0 on error: the broker's own head stands
	return nil
}

func restoreState(r io.Reader) (*state.StateStore, error) {
	st, err := state.NewStateStore()
	if err != nil {
		return nil, fmt.Errorf("fsm: restore: %w", err)
	}
	restore, err := st.Restore()
	if err != nil {
		return nil, fmt.Errorf("fsm: restore: %w", err)
	}
	defer restore.Abort()

	dec := codec.NewDecoder(bufio.NewReader(r), structs.MsgpackHandle)
	var format uint8
	if err := decodeRow(dec, &format); err != nil {
		return nil, fmt.Errorf("fsm: restore: read header: %w", err)
	}
	if format != snapshotFormat {
		return nil, fmt.Errorf("fsm: restore: snapshot format %d is not known to this version (want %d)", format, snapshotFormat)
	}
	for {
		var b uint8
		err := decodeRow(dec, &b)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fsm: restore: read record type: %w", err)
		}
		t, ok := tableForType(SnapshotType(b))
		if !ok {
			return nil, fmt.Errorf("fsm: restore: unknown snapshot record type %d", b)
		}
		row := t.new()
		if err := decodeRow(dec, row); err != nil {
			return nil, fmt.Errorf("fsm: restore %s row: %w", t.table, err)
		}
		if err := restore.Insert(t.table, row); err != nil {
			return nil, fmt.Errorf("fsm: restore %s row: %w", t.table, err)
		}
	}
	if err := restore.Commit(); err != nil {
		return nil, fmt.Errorf("fsm: restore: %w", err)
	}
	return st, nil
}

// decodeRow decodes one msgpack value; a corrupt stream is an error, never
// a panic.
func decodeRow(dec *codec.Decoder, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed row: %v", r)
		}
	}()
	return dec.Decode(out)
}
