package pluginmanager

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func fullInfo() *structs.CSIInfo {
	return &structs.CSIInfo{
		PluginID: "p", AllocID: "a", Healthy: true, HealthDescription: "healthy",
		UpdateTime: time.Unix(1, 0), Provider: "x", ProviderVersion: "1",
		RequiresControllerPlugin: true, RequiresTopologies: true,
		ControllerInfo: &structs.CSIControllerInfo{SupportsAttachDetach: true},
		NodeInfo: &structs.CSINodeInfo{ID: "n", MaxVolumes: 2,
			AccessibleTopology: &structs.CSITopology{Segments: map[string]string{"zone": "a"}}},
	}
}

func TestInfoEqual_Fields(t *testing.T) {
	cases := []struct {
		name  string
		f     func(*structs.CSIInfo)
		equal bool
	}{
		{"same", func(*structs.CSIInfo) {}, true},
		{"update time is ignored", func(i *structs.CSIInfo) { i.UpdateTime = time.Unix(2, 0) }, true},
		{"health", func(i *structs.CSIInfo) { i.Healthy = false }, false},
		{"description", func(i *structs.CSIInfo) { i.HealthDescription = "other" }, false},
		{"alloc", func(i *structs.CSIInfo) { i.AllocID = "b" }, false},
		{"provider version", func(i *structs.CSIInfo) { i.ProviderVersion = "2" }, false},
		{"topologies", func(i *structs.CSIInfo) { i.RequiresTopologies = false }, false},
		{"controller capability", func(i *structs.CSIInfo) { i.ControllerInfo.SupportsClone = true }, false},
		{"controller info gone", func(i *structs.CSIInfo) { i.ControllerInfo = nil }, false},
		{"node ID", func(i *structs.CSIInfo) { i.NodeInfo.ID = "m" }, false},
		{"node topology", func(i *structs.CSIInfo) { i.NodeInfo.AccessibleTopology.Segments["zone"] = "b" }, false},
		{"node topology gone", func(i *structs.CSIInfo) { i.NodeInfo.AccessibleTopology = nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fullInfo()
			tc.f(b)
			must.Eq(t, tc.equal, infoEqual(fullInfo(), b))
			must.Eq(t, tc.equal, infoEqual(b, fullInfo()))
		})
	}
	must.True(t, infoEqual(nil, nil))
	must.False(t, infoEqual(nil, fullInfo()))
}

func TestUpdate_HealthyAndCopy(t *testing.T) {
	sick := fullInfo()
	sick.Healthy, sick.HealthDescription = false, "broken"
	cases := []struct {
		name    string
		up      Update
		healthy bool
		reason  string
	}{
		{"both healthy", Update{Controller: fullInfo(), Node: fullInfo()}, true, ""},
		{"node side sick", Update{Controller: fullInfo(), Node: sick}, false, "broken"},
		{"controller only, sick", Update{Controller: sick}, false, "broken"},
		{"deregistered", Update{}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, reason := tc.up.Healthy()
			must.Eq(t, tc.healthy, h)
			must.Eq(t, tc.reason, reason)
		})
	}

	up := Update{PluginID: "p", Node: fullInfo(), Event: healthEvent("p", false, "broken", fixedNow)}
	c := up.Copy()
	c.Node.NodeInfo.ID = "changed"
	c.Event.Details["plugin"] = "changed"
	must.Eq(t, "n", up.Node.NodeInfo.ID)
	must.Eq(t, "p", up.Event.Details["plugin"])
	must.Eq(t, `plugin "p" became unhealthy: broken`, up.Event.Message)
}
