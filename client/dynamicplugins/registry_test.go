package dynamicplugins

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func newRegistry(t *testing.T) *Registry { return New(testlog.Logger(t, "test")) }

func configPlugin(id string) *PluginInfo {
	return &PluginInfo{ID: id, Type: structs.CSIPluginTypeNode, Socket: "/run/csi/" + id + ".sock", Source: SourceConfig}
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
		{"empty source is config", &PluginInfo{ID: "p", Type: structs.CSIPluginTypeNode, Socket: "/run/csi/p.sock"},
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
