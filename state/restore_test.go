package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_Restore_RoundTrip(t *testing.T) {
	src := claimWorld(t)
	must.NoError(t, claimOne(src, 10, claimReq("snw", "a1", write)))
	must.NoError(t, src.UpsertJob(11, statetest.PluginJob("plug-job", plugID)))

	snap, err := src.Snapshot()
	must.NoError(t, err)
	dst := statetest.New(t)
	r, err := dst.Restore()
	must.NoError(t, err)
	counts := map[string]int{}
	for _, table := range state.Tables {
		iter, err := snap.TableRows(table)
		must.NoError(t, err)
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			must.NoError(t, r.Insert(table, raw))
			counts[table]++
		}
	}
	must.NoError(t, r.Commit())

	for _, table := range state.Tables {
		iter, err := dst.TableRows(table)
		must.NoError(t, err)
		n := 0
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			n++
		}
		must.Eq(t, counts[table], n, must.Sprintf("table %s", table))
		must.Eq(t, mustIndex(t, src, table), mustIndex(t, dst, table))
	}
	must.Eq(t, mustVolume(t, src, "snw"), mustVolume(t, dst, "snw"))
	must.Eq(t, mustPlugin(t, src, plugID), mustPlugin(t, dst, plugID))

	// The restored store keeps working: its indexes are live.
	vols := collect[structs.CSIVolume](t)(dst.CSIVolumesByNodeID(nil, "n1"))
	must.Eq(t, []string{"default/snw"}, volumeIDs(vols))
	must.NoError(t, claimOne(dst, 20, releaseReq("snw", "a1", freed)))
	vols = collect[structs.CSIVolume](t)(dst.CSIVolumesByNodeID(nil, "n1"))
	must.SliceEmpty(t, vols)
}

func TestStateStore_Restore_Abort(t *testing.T) {
	s := statetest.New(t)
	r, err := s.Restore()
	must.NoError(t, err)
	must.NoError(t, r.Insert(state.TableNodes, statetest.Node("n1")))
	r.Abort()
	n, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.Nil(t, n)
}

func TestStateStore_Restore_RejectsBadRows(t *testing.T) {
	cases := []struct {
		name  string
		table string
		row   any
	}{
		{"wrong type", state.TableNodes, statetest.Alloc("a1", "n1")},
		{"unknown table", "widgets", statetest.Node("n1")},
		{"missing primary key", state.TableNodes, statetest.Node("")},
		{"index entry in the wrong table", state.TableJobs, &state.IndexEntry{Key: "jobs", Value: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			r, err := s.Restore()
			must.NoError(t, err)
			defer r.Abort()
			must.ErrorIs(t, r.Insert(tc.table, tc.row), structs.ErrInternal)
		})
	}
}

// A snapshot taken before plugin rows held counts kept the instances in
// the row: a restore counts them from the node rows and drops the maps.
func TestStateStore_Restore_RecountsLegacyPluginRows(t *testing.T) {
	legacy := structs.NewCSIPlugin(plugID, 1)
	legacy.Nodes = map[string]*structs.CSIInfo{"n1": {PluginID: plugID, Healthy: true}, "gone": {PluginID: plugID}}
	legacy.NodesExpected = 7 // whatever a row says, the nodes decide
	down := statetest.NodeWithPlugin("n2", plugID, true, true, true)
	down.Status = structs.NodeStatusDown
	s := restored(t, map[string][]any{
		state.TableCSIPlugins: {legacy},
		state.TableNodes:      {statetest.NodeWithPlugin("n1", plugID, false, true, true), down},
	})

	row, err := s.CSIPluginByID(nil, plugID)
	must.NoError(t, err)
	must.Nil(t, row.Nodes)
	must.Nil(t, row.Controllers)
	must.Eq(t, [4]int{0, 1, 1, 2}, [4]int{row.ControllersHealthy, row.ControllersExpected, row.NodesHealthy, row.NodesExpected})
	must.Eq(t, statetest.Provider, row.Provider)
	must.NotEq(t, "", row.ProviderNode)
}
