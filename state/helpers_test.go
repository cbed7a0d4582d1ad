package state_test

import (
	"errors"
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
)

const plugID = "hostpath"

func upsertNodes(t testing.TB, s *state.StateStore, index uint64, nodes ...*structs.Node) {
	t.Helper()
	for _, n := range nodes {
		must.NoError(t, s.UpsertNode(index, n))
	}
}

func upsertAllocs(t testing.TB, s *state.StateStore, index uint64, allocs ...*structs.Allocation) {
	t.Helper()
	must.NoError(t, s.UpsertAllocs(index, allocs))
}

func upsertVolumes(t testing.TB, s *state.StateStore, index uint64, vols ...*structs.CSIVolume) {
	t.Helper()
	must.NoError(t, s.UpsertCSIVolume(index, vols))
}

// restored returns a store loaded through Restore with rows per table: a
// way to build states the write API refuses to reach.
func restored(t testing.TB, rows map[string][]any) *state.StateStore {
	t.Helper()
	s := statetest.New(t)
	r, err := s.Restore()
	must.NoError(t, err)
	defer r.Abort()
	for _, table := range state.Tables {
		for _, row := range rows[table] {
			must.NoError(t, r.Insert(table, row))
		}
	}
	must.NoError(t, r.Commit())
	return s
}

func claimReq(volID, allocID string, mode structs.CSIVolumeClaimMode) structs.CSIVolumeClaimRequest {
	return structs.CSIVolumeClaimRequest{VolumeID: volID, AllocationID: allocID, Mode: mode}
}

func releaseReq(volID, allocID string, st structs.CSIVolumeClaimState) structs.CSIVolumeClaimRequest {
	return structs.CSIVolumeClaimRequest{VolumeID: volID, AllocationID: allocID, State: st}
}

func claimOne(s *state.StateStore, index uint64, req structs.CSIVolumeClaimRequest) error {
	return s.CSIVolumeClaimBatch(index, []structs.CSIVolumeClaimRequest{req})[0]
}

func mustVolume(t testing.TB, s *state.StateStore, id string) *structs.CSIVolume {
	t.Helper()
	vol, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, id)
	must.NoError(t, err)
	must.NotNil(t, vol)
	return vol
}

// mustPlugin reads a plugin's row with every instance joined in.
func mustPlugin(t testing.TB, s *state.StateStore, id string) *structs.CSIPlugin {
	t.Helper()
	plug, err := s.CSIPluginWithInstances(nil, id)
	must.NoError(t, err)
	must.NotNil(t, plug)
	return plug
}

func mustIndex(t testing.TB, s *state.StateStore, table string) uint64 {
	t.Helper()
	idx, err := s.Index(table)
	must.NoError(t, err)
	return idx
}

// collect drains an iterator of *T rows: collect[structs.Node](t)(s.Nodes(nil)).
func collect[T any](t testing.TB) func(memdb.ResultIterator, error) []*T {
	return func(iter memdb.ResultIterator, err error) []*T {
		t.Helper()
		must.NoError(t, err)
		var out []*T
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out = append(out, raw.(*T))
		}
		return out
	}
}

func volumeIDs(vols []*structs.CSIVolume) []string {
	ids := make([]string, len(vols))
	for i, v := range vols {
		ids[i] = v.Namespace + "/" + v.ID
	}
	return ids
}

// mustCode checks that err matches want (nil, or a sentinel such as
// structs.ErrConflict) and is a coded *structs.Error.
func mustCode(t testing.TB, want, err error) {
	t.Helper()
	if want == nil {
		must.NoError(t, err)
		return
	}
	must.ErrorIs(t, err, want)
	var coded *structs.Error
	must.True(t, errors.As(err, &coded), must.Sprint("state errors must be *structs.Error"))
}
