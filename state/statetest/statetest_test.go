package statetest_test

import (
	"testing"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestFixtures_RegisterAndClaim(t *testing.T) {
	s := statetest.New(t)
	must.NoError(t, s.UpsertNode(1, statetest.NodeWithPlugin("n1", "hostpath", true, true, true)))
	must.NoError(t, s.ApplyPlan(2, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{statetest.Alloc("a1", "n1")}}))
	must.NoError(t, s.ApplyPlan(3, &structs.PlanApplyRequest{Job: statetest.PluginJob("plug", "hostpath")}))
	must.NoError(t, s.UpsertCSIVolume(4, []*structs.CSIVolume{statetest.Volume("data", "hostpath")}))
	errs := s.CSIVolumeClaimBatch(5, []structs.CSIVolumeClaimRequest{{
		VolumeID: "data", AllocationID: "a1", Mode: structs.CSIVolumeClaimWrite,
	}})
	must.NoError(t, errs[0])

	vol, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.True(t, vol.Schedulable)
	must.True(t, vol.ControllerRequired)
	must.Eq(t, statetest.Provider, vol.Provider)
	must.Eq(t, "ext-n1", vol.WriteClaims["a1"].ExternalNodeID)
}

func TestNodeWithPlugin(t *testing.T) {
	cases := []struct {
		name             string
		controller, node bool
		healthy          bool
	}{
		{"controller", true, false, true},
		{"node", false, true, false},
		{"monolith", true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := statetest.NodeWithPlugin("n1", "p", tc.controller, tc.node, tc.healthy)
			must.Eq(t, structs.NodeStatusReady, n.Status)
			must.Eq(t, tc.controller, n.CSIControllerPlugins["p"] != nil)
			must.Eq(t, tc.node, n.CSINodePlugins["p"] != nil)
			if tc.controller {
				c := n.CSIControllerPlugins["p"]
				must.Eq(t, tc.healthy, c.Healthy)
				must.True(t, c.RequiresControllerPlugin)
				must.True(t, c.ControllerInfo.SupportsAttachDetach)
				must.Nil(t, c.NodeInfo)
			}
			if tc.node {
				c := n.CSINodePlugins["p"]
				must.Eq(t, tc.healthy, c.Healthy)
				must.Eq(t, tc.controller, c.RequiresControllerPlugin)
				must.Eq(t, "ext-n1", c.NodeInfo.ID)
				must.Eq(t, int64(10), c.NodeInfo.MaxVolumes)
				must.Nil(t, c.ControllerInfo)
			}
		})
	}
}

func TestVolume_Validates(t *testing.T) {
	v := statetest.Volume("data", "hostpath")
	must.NoError(t, v.Validate())
	must.Eq(t, "ext-data", v.ExternalID)
	must.SliceLen(t, 1, v.RequestedCapabilities)
}
