package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_Index(t *testing.T) {
	s := statetest.New(t)
	latest, err := s.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(0), latest)
	must.Eq(t, uint64(0), mustIndex(t, s, state.TableNodes))

	upsertNodes(t, s, 7, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertAllocs(t, s, 9, statetest.Alloc("a1", "n1"))

	cases := []struct {
		table string
		want  uint64
	}{
		{state.TableNodes, 7},
		{state.TableCSIPlugins, 7},
		{state.TableAllocs, 9},
		{state.TableJobs, 0},
		{state.TableCSIVolumes, 0},
		{"no-such-table", 0},
	}
	for _, tc := range cases {
		t.Run(tc.table, func(t *testing.T) {
			must.Eq(t, tc.want, mustIndex(t, s, tc.table))
		})
	}
	latest, err = s.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(9), latest)
}

func TestStateStore_Index_NeverGoesBack(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 20, statetest.Node("n1"))
	upsertNodes(t, s, 5, statetest.Node("n2"))
	must.Eq(t, uint64(20), mustIndex(t, s, state.TableNodes))
}

func TestStateStore_Snapshot(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertVolumes(t, s, 11, statetest.Volume("data", plugID))

	snap, err := s.Snapshot()
	must.NoError(t, err)
	must.NoError(t, s.UpdateNodeStatus(12, "n1", structs.NodeStatusDown, 1, nil))
	upsertNodes(t, s, 13, statetest.Node("n2"))

	// The snapshot reads, denormalized, as the store was.
	vol, err := snap.CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.True(t, vol.Schedulable)
	must.False(t, mustVolume(t, s, "data").Schedulable)
	n2, err := snap.NodeByID(nil, "n2")
	must.NoError(t, err)
	must.Nil(t, n2)
	latest, err := snap.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(11), latest)
}

func TestStateStore_Abandon(t *testing.T) {
	s := statetest.New(t)
	snap, err := s.Snapshot()
	must.NoError(t, err)
	select {
	case <-s.AbandonCh():
		t.Fatal("a new store must not be abandoned")
	default:
	}
	s.Abandon()
	s.Abandon() // twice is fine
	select {
	case <-s.AbandonCh():
	default:
		t.Fatal("AbandonCh must be closed after Abandon")
	}
	select {
	case <-snap.AbandonCh():
		t.Fatal("abandoning the store must not abandon its snapshots")
	default:
	}
}

func TestStateStore_TableRows(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true), statetest.Node("n2"))
	upsertAllocs(t, s, 11, statetest.Alloc("a1", "n1"))
	must.NoError(t, s.UpsertJob(12, statetest.Job("web")))
	upsertVolumes(t, s, 13, statetest.Volume("data", plugID))

	want := map[string]int{
		state.TableIndex:       6,
		state.TableNodes:       2,
		state.TableJobs:        1,
		state.TableJobVersions: 1, // its first version
		state.TableAllocs:      1,
		state.TableCSIPlugins:  1,
		state.TableCSIVolumes:  1,
	}
	for _, table := range state.Tables {
		t.Run(table, func(t *testing.T) {
			iter, err := s.TableRows(table)
			must.NoError(t, err)
			n := 0
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				n++
			}
			must.Eq(t, want[table], n)
		})
	}
	_, err := s.TableRows("no-such-table")
	must.ErrorIs(t, err, structs.ErrInternal)
}
