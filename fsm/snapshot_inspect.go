package fsm

import (
	"fmt"
	"io"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// SnapshotInfo is what an FSM snapshot stream holds.
type SnapshotInfo struct {
	// Tables counts the rows of every table but the index table, in the
	// order the stream persists them.
	Tables []*structs.SnapshotTableCount
	// LatestIndex is the highest raft index the tables record.
	LatestIndex uint64
}

// InspectSnapshot decodes an FSM snapshot stream (what Persist writes: the
// state.bin of an operator snapshot file) into a scratch store, exactly as
// Restore would, and counts what it holds. A stream Restore would refuse
// is refused here with the same error, so a server checks a snapshot with
// it before handing it to raft, whose Restore on the leader may not fail.
func InspectSnapshot(r io.Reader) (*SnapshotInfo, error) {
	st, err := restoreState(r)
	if err != nil {
		return nil, err
	}
	info := &SnapshotInfo{}
	for _, t := range snapshotTables {
		if t.table == state.TableIndex {
			continue
		}
		iter, err := st.TableRows(t.table)
		if err != nil {
			return nil, fmt.Errorf("fsm: inspect %s: %w", t.table, err)
		}
		n := 0
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			n++
		}
		info.Tables = append(info.Tables, &structs.SnapshotTableCount{Table: t.table, Rows: n})
	}
	if info.LatestIndex, err = st.LatestIndex(); err != nil {
		return nil, fmt.Errorf("fsm: inspect: %w", err)
	}
	return info, nil
}
