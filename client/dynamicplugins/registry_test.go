package dynamicplugins

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func newRegistry(t *testing.T) *Registry { return New(testlog.Logger(t, "test")) }

func configPlugin(id string) *PluginInfo {
	return &PluginInfo{ID: id, Type: structs.CSIPluginTypeMonolith, Socket: "/run/csi/" + id + ".sock", Source: SourceConfig}
}

func taskPlugin(id, alloc string) *PluginInfo {
	return &PluginInfo{ID: id, Type: structs.CSIPluginTypeMonolith, Socket: "/alloc/" + alloc + "/csi.sock", Source: SourceTask, AllocID: alloc}
}

func TestRegistry_Register_ListSorted(t *testing.T) {
	r := newRegistry(t)
	for _, id := range []string{"c", "a", "b"} {
		must.NoError(t, r.Register(configPlugin(id)))
	}
	list := r.List()
	must.SliceLen(t, 3, list)
	must.Eq(t, []string{"a", "b", "c"}, []string{list[0].ID, list[1].ID, list[2].ID})

	// The registry holds copies: changing what was registered or listed
	// changes nothing inside.
	p := configPlugin("d")
	must.NoError(t, r.Register(p))
	p.Socket = "/elsewhere.sock"
	list[0].Socket = "/elsewhere.sock"
	got, ok := r.Get("d")
	must.True(t, ok)
	must.Eq(t, "/run/csi/d.sock", got.Socket)
	got, _ = r.Get("a")
	must.Eq(t, "/run/csi/a.sock", got.Socket)

	_, ok = r.Get("missing")
	must.False(t, ok)
}

func TestRegistry_Register_Scenarios(t *testing.T) {
	cases := []struct {
		name    string
		first   *PluginInfo
		second  *PluginInfo
		wantErr error
		want    *PluginInfo // registered after the second call
	}{
		{"same source replaces (config)", configPlugin("p"),
			&PluginInfo{ID: "p", Type: structs.CSIPluginTypeMonolith, Socket: "/new.sock", Source: SourceConfig},
			nil, &PluginInfo{ID: "p", Type: structs.CSIPluginTypeMonolith, Socket: "/new.sock", Source: SourceConfig}},
		{"same source replaces (new alloc)", taskPlugin("p", "a1"), taskPlugin("p", "a2"), nil, taskPlugin("p", "a2")},
		{"other source conflicts", configPlugin("p"), taskPlugin("p", "a1"), ErrPluginConflict, configPlugin("p")},
		{"empty source is config", &PluginInfo{ID: "p", Type: structs.CSIPluginTypeMonolith, Socket: "/run/csi/p.sock"},
			configPlugin("p"), nil, configPlugin("p")},
		{"invalid second keeps first", configPlugin("p"), &PluginInfo{ID: "p", Type: "x", Socket: "/s"},
			ErrInvalidPlugin, configPlugin("p")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			must.NoError(t, r.Register(tc.first))
			err := r.Register(tc.second)
			if tc.wantErr != nil {
				must.ErrorIs(t, err, tc.wantErr)
			} else {
				must.NoError(t, err)
			}
			got, ok := r.Get("p")
			must.True(t, ok)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestRegistry_Deregister_Scenarios(t *testing.T) {
	cases := []struct {
		name      string
		register  *PluginInfo
		id, alloc string
		wantErr   error
		remains   bool
	}{
		{"config plugin", configPlugin("p"), "p", "", nil, false},
		{"task plugin", taskPlugin("p", "a1"), "p", "a1", nil, false},
		{"unknown ID", configPlugin("p"), "q", "", ErrPluginNotFound, true},
		{"stale alloc keeps the replacement", taskPlugin("p", "a2"), "p", "a1", ErrAllocMismatch, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t)
			must.NoError(t, r.Register(tc.register))
			err := r.Deregister(tc.id, tc.alloc)
			if tc.wantErr != nil {
				must.ErrorIs(t, err, tc.wantErr)
			} else {
				must.NoError(t, err)
			}
			_, ok := r.Get("p")
			must.Eq(t, tc.remains, ok)
		})
	}
}

// A plugin's controller and node instances stand side by side, each found
// by the service it serves; a monolith replaces both, and is replaced by
// either; deregistering one leaves the other.
func TestRegistry_SplitInstances(t *testing.T) {
	r := newRegistry(t)
	split := func(typ structs.CSIPluginType, alloc string) *PluginInfo {
		return &PluginInfo{ID: "p", Type: typ, Socket: "/alloc/" + alloc + "/csi.sock", Source: SourceTask, AllocID: alloc}
	}
	must.NoError(t, r.Register(split(structs.CSIPluginTypeController, "c1")))
	must.NoError(t, r.Register(split(structs.CSIPluginTypeNode, "n1")))
	list := r.List()
	must.SliceLen(t, 2, list)
	must.Eq(t, []string{"p/controller", "p/node"}, []string{list[0].Key(), list[1].Key()})
	ctrl, ok := r.Controller("p")
	must.True(t, ok)
	must.Eq(t, "c1", ctrl.AllocID)
	node, ok := r.Node("p")
	must.True(t, ok)
	must.Eq(t, "n1", node.AllocID)

	must.ErrorIs(t, r.Deregister("p", "c1"), ErrPluginNotFound, must.Sprint("no monolith"))
	must.NoError(t, r.Deregister("p/controller", "c1"))
	_, ok = r.Controller("p")
	must.False(t, ok)
	_, ok = r.Node("p")
	must.True(t, ok, must.Sprint("the node instance stays"))

	must.NoError(t, r.Register(split(structs.CSIPluginTypeController, "c2")))
	must.NoError(t, r.Register(taskPlugin("p", "m1")))
	must.SliceLen(t, 1, r.List(), must.Sprint("the monolith replaced both"))
	ctrl, _ = r.Controller("p")
	node, _ = r.Node("p")
	must.Eq(t, "m1", ctrl.AllocID)
	must.Eq(t, "m1", node.AllocID)

	must.NoError(t, r.Register(split(structs.CSIPluginTypeNode, "n2")))
	must.Eq(t, []string{"p/node"}, []string{r.List()[0].Key()}, must.Sprint("a node instance replaced the monolith"))
	_, ok = r.Controller("p")
	must.False(t, ok)
	must.ErrorIs(t, r.Register(&PluginInfo{ID: "p", Type: structs.CSIPluginTypeMonolith, Socket: "/run/p.sock", Source: SourceConfig}), ErrPluginConflict)
}
