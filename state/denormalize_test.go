package state_test

import (
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
)

func TestStateStore_PluginCounts_Health(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []*structs.Node
		down      []string
		wantCtrl  [2]int // healthy, expected
		wantNodes [2]int
	}{
		{
			name:      "healthy monolith on a ready node",
			nodes:     []*structs.Node{statetest.NodeWithPlugin("n1", plugID, true, true, true)},
			wantCtrl:  [2]int{1, 1},
			wantNodes: [2]int{1, 1},
		},
		{
			name:      "unhealthy instance",
			nodes:     []*structs.Node{statetest.NodeWithPlugin("n1", plugID, true, true, false)},
			wantCtrl:  [2]int{0, 1},
			wantNodes: [2]int{0, 1},
		},
		{
			name: "node down",
			nodes: []*structs.Node{
				statetest.NodeWithPlugin("n1", plugID, true, true, true),
				statetest.NodeWithPlugin("n2", plugID, false, true, true),
			},
			down:      []string{"n1"},
			wantCtrl:  [2]int{0, 1},
			wantNodes: [2]int{1, 2},
		},
		{
			name: "node initializing",
			nodes: func() []*structs.Node {
				n := statetest.NodeWithPlugin("n1", plugID, false, true, true)
				n.Status = structs.NodeStatusInit
				return []*structs.Node{n}
			}(),
			wantNodes: [2]int{0, 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			upsertNodes(t, s, 10, tc.nodes...)
			for _, id := range tc.down {
				must.NoError(t, s.UpdateNodeStatus(11, id, structs.NodeStatusDown, 1, nil))
			}
			plug := mustPlugin(t, s, plugID)
			must.Eq(t, tc.wantCtrl, [2]int{plug.ControllersHealthy, plug.ControllersExpected})
			must.Eq(t, tc.wantNodes, [2]int{plug.NodesHealthy, plug.NodesExpected})
		})
	}
}

func TestStateStore_PluginCounts_MoveWithTheNodes(t *testing.T) {
	s := statetest.New(t)
	counts := func() [5]int {
		t.Helper()
		p := mustPlugin(t, s, plugID)
		return [5]int{p.ControllersHealthy, p.ControllersExpected, p.NodesHealthy, p.NodesExpected, p.ControllersPublishing}
	}
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, true, true, true),
		statetest.NodeWithPlugin("n2", plugID, false, true, true))
	must.Eq(t, [5]int{1, 1, 2, 2, 1}, counts())

	// Down, then ready again: the healthy counts follow, the expected stay.
	must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusDown, 1, nil))
	must.Eq(t, [5]int{0, 1, 1, 2, 1}, counts())
	must.NoError(t, s.UpdateNodeStatus(12, "n1", structs.NodeStatusReady, 2, nil))
	must.Eq(t, [5]int{1, 1, 2, 2, 1}, counts())

	// A fingerprint that flips the node side's health.
	sick := statetest.NodeWithPlugin("n2", plugID, false, true, false).CSINodePlugins[plugID]
	must.NoError(t, s.UpdateNodeFingerprint(13, &structs.NodeFingerprintRequest{NodeID: "n2",
		Plugins: []*structs.NodePluginUpdate{{PluginID: plugID, Node: sick}}}))
	must.Eq(t, [5]int{1, 1, 1, 2, 1}, counts())
	must.Eq(t, uint64(13), mustPlugin(t, s, plugID).ModifyIndex)

	// A registration without the plugin, then a deletion.
	must.NoError(t, s.UpsertNode(14, statetest.Node("n1")))
	must.Eq(t, [5]int{0, 0, 0, 1, 0}, counts())
	must.NoError(t, s.DeleteNode(15, []string{"n2"}))
	plug, err := s.CSIPluginByID(nil, plugID)
	must.NoError(t, err)
	must.Nil(t, plug, must.Sprint("a plugin no node and no job runs is deleted"))
}

func TestStateStore_PluginCounts_UnchangedInstanceWritesNothing(t *testing.T) {
	s := statetest.New(t)
	n := statetest.NodeWithPlugin("n1", plugID, true, true, true)
	upsertNodes(t, s, 10, n)
	upsertNodes(t, s, 11, n) // the same fingerprint again
	must.Eq(t, uint64(10), mustPlugin(t, s, plugID).ModifyIndex)
}

func TestStateStore_CSIPluginPage(t *testing.T) {
	s := statetest.New(t)
	upsertAllocs(t, s, 9, statetest.Alloc("plug-b", "n2"), statetest.Alloc("plug-a", "n1"))

	mono := statetest.NodeWithPlugin("n1", plugID, true, true, true)
	mono.CSIControllerPlugins[plugID].AllocID = "plug-a"
	mono.CSINodePlugins[plugID].AllocID = "plug-a"
	node := statetest.NodeWithPlugin("n2", plugID, false, true, true)
	node.CSINodePlugins[plugID].AllocID = "plug-b"
	gone := statetest.NodeWithPlugin("n3", plugID, false, true, true)
	gone.CSINodePlugins[plugID].AllocID = "plug-gone"
	outside := statetest.NodeWithPlugin("n4", plugID, false, true, true) // run outside berth: no alloc
	other := statetest.NodeWithPlugin("n5", "other", false, true, true)
	upsertNodes(t, s, 10, mono, node, gone, outside, other)

	plug, next, err := s.CSIPluginPage(nil, plugID, "", 0)
	must.NoError(t, err)
	must.Eq(t, "", next)
	must.MapLen(t, 1, plug.Controllers)
	must.MapLen(t, 4, plug.Nodes)
	var ids []string
	for _, a := range plug.Allocations {
		ids = append(ids, a.ID)
	}
	must.Eq(t, []string{"plug-a", "plug-b"}, ids)
	must.Eq(t, "n1", plug.Allocations[0].NodeID)

	// Two pages of two nodes.
	first, next, err := s.CSIPluginPage(nil, plugID, "", 2)
	must.NoError(t, err)
	must.Eq(t, "n3", next)
	must.MapContainsKeys(t, first.Nodes, []string{"n1", "n2"})
	must.MapLen(t, 2, first.Nodes)
	second, next, err := s.CSIPluginPage(nil, plugID, next, 2)
	must.NoError(t, err)
	must.Eq(t, "", next)
	must.MapContainsKeys(t, second.Nodes, []string{"n3", "n4"})
	must.MapLen(t, 2, second.Nodes)
	must.MapLen(t, 0, second.Controllers)
	must.SliceEmpty(t, second.Allocations, must.Sprint("plug-gone no longer exists"))

	row, err := s.CSIPluginByID(nil, plugID)
	must.NoError(t, err)
	must.Nil(t, row.Nodes, must.Sprint("the stored row holds counts, not instances"))
}

func TestStateStore_CSIPluginByID_WatchIgnoresOtherPlugins(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true),
		statetest.NodeWithPlugin("n2", "other", false, true, true))

	ws := memdb.NewWatchSet()
	_, _, err := s.CSIPluginPage(ws, plugID, "", 0)
	must.NoError(t, err)
	must.NoError(t, s.UpdateNodeStatus(11, "n2", structs.NodeStatusDown, 1, nil))
	must.True(t, ws.Watch(time.After(200*time.Millisecond)), must.Sprint("another plugin's node going down must not wake this plugin's read"))
}

func TestStateStore_CSIPluginByID_WatchFiresWhenNodeGoesDown(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))

	ws := memdb.NewWatchSet()
	_, err := s.CSIPluginByID(ws, plugID)
	must.NoError(t, err)
	must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusDown, 1, nil))
	must.False(t, ws.Watch(time.After(5*time.Second)), must.Sprint("the plugin read must wake when its node goes down"))
}

func TestStateStore_CSIVolumeByID_Schedulable(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []*structs.Node
		down      []string
		want      bool
		wantCtrlR bool
	}{
		{
			name:  "healthy node plugin, no controller needed",
			nodes: []*structs.Node{statetest.NodeWithPlugin("n1", plugID, false, true, true)},
			want:  true,
		},
		{
			name:      "controller required and healthy",
			nodes:     []*structs.Node{statetest.NodeWithPlugin("n1", plugID, true, true, true)},
			want:      true,
			wantCtrlR: true,
		},
		{
			name: "controller required but unhealthy",
			nodes: []*structs.Node{
				statetest.NodeWithPlugin("n1", plugID, true, false, false),
				func() *structs.Node {
					n := statetest.NodeWithPlugin("n2", plugID, false, true, true)
					n.CSINodePlugins[plugID].RequiresControllerPlugin = true
					return n
				}(),
			},
			wantCtrlR: true,
		},
		{
			name:  "node plugin unhealthy",
			nodes: []*structs.Node{statetest.NodeWithPlugin("n1", plugID, false, true, false)},
		},
		{
			name:  "only node down",
			nodes: []*structs.Node{statetest.NodeWithPlugin("n1", plugID, false, true, true)},
			down:  []string{"n1"},
		},
		{
			name: "controller node down",
			nodes: []*structs.Node{
				statetest.NodeWithPlugin("n1", plugID, true, false, true),
				func() *structs.Node {
					n := statetest.NodeWithPlugin("n2", plugID, false, true, true)
					n.CSINodePlugins[plugID].RequiresControllerPlugin = true
					return n
				}(),
			},
			down:      []string{"n1"},
			wantCtrlR: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			upsertNodes(t, s, 10, tc.nodes...)
			upsertVolumes(t, s, 11, statetest.Volume("data", plugID))
			for _, id := range tc.down {
				must.NoError(t, s.UpdateNodeStatus(12, id, structs.NodeStatusDown, 1, nil))
			}
			vol := mustVolume(t, s, "data")
			must.Eq(t, tc.want, vol.Schedulable)
			must.Eq(t, tc.wantCtrlR, vol.ControllerRequired)
			must.Eq(t, statetest.Provider, vol.Provider)
			must.Eq(t, statetest.ProviderVersion, vol.ProviderVersion)
			plug := mustPlugin(t, s, plugID)
			must.Eq(t, plug.NodesHealthy, vol.NodesHealthy)
			must.Eq(t, plug.NodesExpected, vol.NodesExpected)
			must.Eq(t, plug.ControllersHealthy, vol.ControllersHealthy)
			must.Eq(t, plug.ControllersExpected, vol.ControllersExpected)
		})
	}
}

// TestStateStore_CSIVolumeByID_NoPlugin: a volume whose plugin is
// gone reads as not schedulable, whatever its row holds (a row written
// with derived fields: the write API never stores them).
func TestStateStore_CSIVolumeByID_NoPlugin(t *testing.T) {
	vol := statetest.Volume("data", "missing")
	vol.Provider = "stale"
	vol.Schedulable = true
	vol.NodesHealthy = 3
	s := restored(t, map[string][]any{state.TableCSIVolumes: {vol}})

	got := mustVolume(t, s, "data")
	must.False(t, got.Schedulable)
	must.Eq(t, "", got.Provider)
	must.Eq(t, 0, got.NodesHealthy)
	must.True(t, vol.Schedulable, must.Sprint("the stored row must not be changed"))
}

// TestStateStore_CSIVolumeByID_ClaimAllocs: a read joins the
// allocations of the read and write claims (nil for one that is gone),
// not those of past claims.
func TestStateStore_CSIVolumeByID_ClaimAllocs(t *testing.T) {
	claim := func(id string, mode structs.CSIVolumeClaimMode) *structs.CSIVolumeClaim {
		return &structs.CSIVolumeClaim{AllocID: id, NodeID: "n1", Mode: mode}
	}
	vol := statetest.Volume("data", plugID)
	vol.ReadClaims = map[string]*structs.CSIVolumeClaim{
		"reader": claim("reader", structs.CSIVolumeClaimRead),
		"gone":   claim("gone", structs.CSIVolumeClaimRead),
	}
	vol.WriteClaims = map[string]*structs.CSIVolumeClaim{"writer": claim("writer", structs.CSIVolumeClaimWrite)}
	vol.PastClaims = map[string]*structs.CSIVolumeClaim{"past": claim("past", structs.CSIVolumeClaimWrite)}
	s := restored(t, map[string][]any{
		state.TableAllocs:     {statetest.Alloc("reader", "n1"), statetest.Alloc("writer", "n1")},
		state.TableCSIVolumes: {vol},
	})

	got := mustVolume(t, s, "data")
	must.MapLen(t, 2, got.ReadAllocs)
	must.NotNil(t, got.ReadAllocs["reader"])
	must.Eq(t, "reader", got.ReadAllocs["reader"].ID)
	must.MapContainsKey(t, got.ReadAllocs, "gone")
	must.Nil(t, got.ReadAllocs["gone"])
	must.MapLen(t, 1, got.WriteAllocs)
	must.Eq(t, "writer", got.WriteAllocs["writer"].ID)
	must.Nil(t, vol.ReadAllocs, must.Sprint("the stored row must not be changed"))
}

func TestStateStore_CSIVolumeByID_WatchFiresWhenNodeGoesDown(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertVolumes(t, s, 11, statetest.Volume("data", plugID))

	ws := memdb.NewWatchSet()
	vol, err := s.CSIVolumeByID(ws, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.True(t, vol.Schedulable)
	must.NoError(t, s.UpdateNodeStatus(12, "n1", structs.NodeStatusDown, 1, nil))
	must.False(t, ws.Watch(time.After(5*time.Second)), must.Sprint("the volume read must wake when its plugin's node goes down"))
	must.False(t, mustVolume(t, s, "data").Schedulable)
}
