package dynamicplugins

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestPluginInfo_Validate(t *testing.T) {
	ok := func() *PluginInfo {
		return &PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, Socket: "/run/csi/hostpath.sock", Source: SourceConfig}
	}
	with := func(f func(*PluginInfo)) *PluginInfo { p := ok(); f(p); return p }

	cases := []struct {
		name string
		p    *PluginInfo
		want string // substring of the error; "" for valid
	}{
		{"valid config plugin", ok(), ""},
		{"empty source means config", with(func(p *PluginInfo) { p.Source = "" }), ""},
		{"valid task plugin", with(func(p *PluginInfo) { p.Source, p.AllocID = SourceTask, "a1" }), ""},
		{"split sockets", with(func(p *PluginInfo) { p.ControllerSocket = "/run/csi/ctrl.sock" }), ""},
		{"nil", nil, "nil"},
		{"no ID", with(func(p *PluginInfo) { p.ID = "" }), "an ID is required"},
		{"ID with slash", with(func(p *PluginInfo) { p.ID = "a/b" }), "must not contain"},
		{"ID with space", with(func(p *PluginInfo) { p.ID = "a b" }), "must not contain"},
		{"bad type", with(func(p *PluginInfo) { p.Type = "storage" }), `type "storage" is not`},
		{"relative socket", with(func(p *PluginInfo) { p.Socket = "csi.sock" }), `socket "csi.sock" must be an absolute path`},
		{"no socket", with(func(p *PluginInfo) { p.Socket = "" }), "must be an absolute path"},
		{"socket too long", with(func(p *PluginInfo) { p.Socket = "/" + strings.Repeat("x", 120) }), "longer than a unix socket path"},
		{"relative controller socket", with(func(p *PluginInfo) { p.ControllerSocket = "c.sock" }), "controller socket"},
		{"controller socket on node plugin", with(func(p *PluginInfo) {
			p.Type, p.ControllerSocket = structs.CSIPluginTypeNode, "/c.sock"
		}), "only for controller or monolith"},
		{"config plugin with alloc", with(func(p *PluginInfo) { p.AllocID = "a1" }), "has no allocation"},
		{"task plugin without alloc", with(func(p *PluginInfo) { p.Source = SourceTask }), "needs its allocation ID"},
		{"bad source", with(func(p *PluginInfo) { p.Source = "magic" }), `source "magic"`},
		{"task plugin with mount dir", with(func(p *PluginInfo) { p.Source, p.AllocID, p.MountDir = SourceTask, "a1", "/csi" }), ""},
		{"relative mount dir", with(func(p *PluginInfo) { p.MountDir = "csi" }), `mount dir "csi" must be a clean absolute path`},
		{"unclean mount dir", with(func(p *PluginInfo) { p.MountDir = "/csi/../x/" }), `mount dir "/csi/../x/"`},
		{"root mount dir", with(func(p *PluginInfo) { p.MountDir = "/" }), `mount dir "/"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrInvalidPlugin)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

func TestPluginInfo_Provides(t *testing.T) {
	cases := []struct {
		typ        structs.CSIPluginType
		node, ctrl bool
	}{
		{structs.CSIPluginTypeNode, true, false},
		{structs.CSIPluginTypeController, false, true},
		{structs.CSIPluginTypeMonolith, true, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.typ), func(t *testing.T) {
			p := &PluginInfo{Type: tc.typ}
			must.Eq(t, tc.node, p.ProvidesNode())
			must.Eq(t, tc.ctrl, p.ProvidesController())
		})
	}
	var nilInfo *PluginInfo
	must.Nil(t, nilInfo.Copy())
}
