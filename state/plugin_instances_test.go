package state_test

import (
	"sort"
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

// instances is what a plugin row should hold: node IDs of its controller
// and node instances.
type instances struct {
	Controllers []string
	Nodes       []string
}

func pluginInstances(p *structs.CSIPlugin) instances {
	return instances{Controllers: sortedIDs(p.Controllers), Nodes: sortedIDs(p.Nodes)}
}

func sortedIDs(m map[string]*structs.CSIInfo) []string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// withPlugins returns a ready node reporting each plugin as a node
// instance (and a controller when ctrl).
func withPlugins(id string, ctrl bool, plugins ...string) *structs.Node {
	n := statetest.Node(id)
	for _, p := range plugins {
		src := statetest.NodeWithPlugin(id, p, ctrl, true, true)
		if n.CSINodePlugins == nil {
			n.CSINodePlugins = map[string]*structs.CSIInfo{}
		}
		n.CSINodePlugins[p] = src.CSINodePlugins[p]
		if ctrl {
			if n.CSIControllerPlugins == nil {
				n.CSIControllerPlugins = map[string]*structs.CSIInfo{}
			}
			n.CSIControllerPlugins[p] = src.CSIControllerPlugins[p]
		}
	}
	return n
}

func TestStateStore_UpsertNode_PluginRows(t *testing.T) {
	type step struct {
		node   *structs.Node // upserted, or
		delete string        // node deleted, or
		job    *structs.Job  // job upserted
	}
	stopped := statetest.PluginJob("plug-job", "p1")
	stopped.Stop = true
	cases := []struct {
		name  string
		steps []step
		want  map[string]*instances // nil value: plugin row absent
	}{
		{
			name:  "node instance creates the row",
			steps: []step{{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)}},
			want:  map[string]*instances{"p1": {Nodes: []string{"n1"}}},
		},
		{
			name:  "controller only",
			steps: []step{{node: statetest.NodeWithPlugin("n1", "p1", true, false, true)}},
			want:  map[string]*instances{"p1": {Controllers: []string{"n1"}}},
		},
		{
			name:  "monolith fills both maps",
			steps: []step{{node: statetest.NodeWithPlugin("n1", "p1", true, true, true)}},
			want:  map[string]*instances{"p1": {Controllers: []string{"n1"}, Nodes: []string{"n1"}}},
		},
		{
			name: "second node adds its instance",
			steps: []step{
				{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)},
				{node: statetest.NodeWithPlugin("n2", "p1", false, true, false)},
			},
			want: map[string]*instances{"p1": {Nodes: []string{"n1", "n2"}}},
		},
		{
			name: "plugin dropped from fingerprint removes the instance",
			steps: []step{
				{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)},
				{node: statetest.NodeWithPlugin("n2", "p1", false, true, true)},
				{node: statetest.Node("n1")},
			},
			want: map[string]*instances{"p1": {Nodes: []string{"n2"}}},
		},
		{
			name: "controller dropped keeps the node instance",
			steps: []step{
				{node: statetest.NodeWithPlugin("n1", "p1", true, true, true)},
				{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)},
			},
			want: map[string]*instances{"p1": {Nodes: []string{"n1"}}},
		},
		{
			name: "last instance gone deletes the row",
			steps: []step{
				{node: statetest.NodeWithPlugin("n1", "p1", true, true, true)},
				{node: statetest.Node("n1")},
			},
			want: map[string]*instances{"p1": nil},
		},
		{
			name: "only the dropped plugin of two is deleted",
			steps: []step{
				{node: withPlugins("n1", false, "p1", "p2")},
				{node: withPlugins("n1", false, "p2")},
			},
			want: map[string]*instances{"p1": nil, "p2": {Nodes: []string{"n1"}}},
		},
		{
			name: "a job running the plugin keeps the empty row",
			steps: []step{
				{job: statetest.PluginJob("plug-job", "p1")},
				{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)},
				{node: statetest.Node("n1")},
			},
			want: map[string]*instances{"p1": {}},
		},
		{
			name: "a stopped job does not keep the row",
			steps: []step{
				{job: stopped},
				{node: statetest.NodeWithPlugin("n1", "p1", false, true, true)},
				{node: statetest.Node("n1")},
			},
			want: map[string]*instances{"p1": nil},
		},
		{
			name: "node delete removes its instances",
			steps: []step{
				{node: statetest.NodeWithPlugin("n1", "p1", true, true, true)},
				{node: statetest.NodeWithPlugin("n2", "p1", false, true, true)},
				{delete: "n1"},
			},
			want: map[string]*instances{"p1": {Nodes: []string{"n2"}}},
		},
		{
			name: "node delete deletes the emptied row",
			steps: []step{
				{node: withPlugins("n1", true, "p1", "p2")},
				{delete: "n1"},
			},
			want: map[string]*instances{"p1": nil, "p2": nil},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			for i, st := range tc.steps {
				index := uint64(10 + i)
				switch {
				case st.node != nil:
					must.NoError(t, s.UpsertNode(index, st.node))
				case st.job != nil:
					must.NoError(t, s.UpsertJob(index, st.job))
				default:
					must.NoError(t, s.DeleteNode(index, []string{st.delete}))
				}
			}
			for id, want := range tc.want {
				plug, err := s.CSIPluginWithInstances(nil, id)
				must.NoError(t, err)
				if want == nil {
					must.Nil(t, plug, must.Sprintf("plugin %q should be deleted", id))
					continue
				}
				must.NotNil(t, plug, must.Sprintf("plugin %q should exist", id))
				must.Eq(t, *want, pluginInstances(plug))
			}
		})
	}
}

func TestStateStore_UpsertNode_PluginRowsWrittenOnlyWhenChanged(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, withPlugins("n1", false, "p1", "p2"))

	// The same fingerprint again writes the node, no plugin.
	upsertNodes(t, s, 11, withPlugins("n1", false, "p1", "p2"))
	must.Eq(t, uint64(11), mustIndex(t, s, state.TableNodes))
	must.Eq(t, uint64(10), mustIndex(t, s, state.TableCSIPlugins))
	must.Eq(t, uint64(10), mustPlugin(t, s, "p1").ModifyIndex)

	// A change of p2 only writes p2.
	n := withPlugins("n1", false, "p1", "p2")
	n.CSINodePlugins["p2"].Healthy = false
	upsertNodes(t, s, 12, n)
	must.Eq(t, uint64(12), mustIndex(t, s, state.TableCSIPlugins))
	must.Eq(t, uint64(10), mustPlugin(t, s, "p1").ModifyIndex)
	p2 := mustPlugin(t, s, "p2")
	must.Eq(t, uint64(12), p2.ModifyIndex)
	must.Eq(t, uint64(10), p2.CreateIndex)
	must.False(t, p2.Nodes["n1"].Healthy)

	// Another node's plugins are not touched by this node's upsert.
	upsertNodes(t, s, 13, withPlugins("n2", false, "p3"))
	must.Eq(t, uint64(10), mustPlugin(t, s, "p1").ModifyIndex)
}

func TestStateStore_UpsertNode_PluginProviderFromNewestInfo(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(sec, 0) }
	report := func(node, version string, updated time.Time, ctrl bool) *structs.Node {
		n := statetest.NodeWithPlugin(node, plugID, ctrl, true, true)
		for _, info := range []*structs.CSIInfo{n.CSINodePlugins[plugID], n.CSIControllerPlugins[plugID]} {
			if info != nil {
				info.ProviderVersion = version
				info.UpdateTime = updated
			}
		}
		return n
	}
	cases := []struct {
		name        string
		reports     []*structs.Node
		wantVersion string
		wantCtrlReq bool
	}{
		{
			name:        "single report",
			reports:     []*structs.Node{report("n1", "1.0", at(1), false)},
			wantVersion: "1.0",
		},
		{
			name:        "newer report wins",
			reports:     []*structs.Node{report("n1", "1.0", at(1), false), report("n2", "2.0", at(2), true)},
			wantVersion: "2.0",
			wantCtrlReq: true,
		},
		{
			name:        "an older report does not win",
			reports:     []*structs.Node{report("n2", "2.0", at(2), false), report("n1", "1.0", at(1), false)},
			wantVersion: "2.0",
		},
		{
			name:        "on a tie the latest report wins",
			reports:     []*structs.Node{report("n1", "1.0", at(1), false), report("n2", "2.0", at(1), false)},
			wantVersion: "2.0",
		},
		{
			name: "the newest instance leaving hands over to the next",
			reports: []*structs.Node{
				report("n1", "1.0", at(1), false),
				report("n2", "2.0", at(2), true),
				statetest.Node("n2"),
			},
			wantVersion: "1.0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			for i, n := range tc.reports {
				upsertNodes(t, s, uint64(10+i), n)
			}
			plug := mustPlugin(t, s, plugID)
			must.Eq(t, statetest.Provider, plug.Provider)
			must.Eq(t, tc.wantVersion, plug.Version)
			must.Eq(t, tc.wantCtrlReq, plug.ControllerRequired)
		})
	}
}

func TestStateStore_UpsertNode_PluginInstanceIsCopied(t *testing.T) {
	s := statetest.New(t)
	n := statetest.NodeWithPlugin("n1", plugID, true, true, true)
	upsertNodes(t, s, 10, n)
	n.CSINodePlugins[plugID].NodeInfo.MaxVolumes = 99
	n.CSIControllerPlugins[plugID].ControllerInfo.SupportsAttachDetach = false

	plug := mustPlugin(t, s, plugID)
	must.Eq(t, int64(10), plug.Nodes["n1"].NodeInfo.MaxVolumes)
	must.True(t, plug.Controllers["n1"].ControllerInfo.SupportsAttachDetach)
}

func TestStateStore_UpdateNodeStatus_MovesHealthyCounts(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, true, true, true))
	must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusDown, 1, nil))

	plug := mustPlugin(t, s, plugID)
	must.Eq(t, uint64(11), plug.ModifyIndex)
	must.Eq(t, uint64(11), mustIndex(t, s, state.TableCSIPlugins))
	must.Eq(t, 0, plug.NodesHealthy)
	must.Eq(t, 0, plug.ControllersHealthy)
	must.Eq(t, 1, plug.NodesExpected)
}
