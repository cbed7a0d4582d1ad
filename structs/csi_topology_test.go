package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestCSIVolume_AccessibleFrom(t *testing.T) {
	zoneA := &CSITopology{Segments: map[string]string{"zone": "a"}}
	zoneArack1 := &CSITopology{Segments: map[string]string{"zone": "a", "rack": "r1"}}
	zoneB := &CSITopology{Segments: map[string]string{"zone": "b"}}

	anywhere := &CSIVolume{}
	must.True(t, anywhere.AccessibleFrom(nil))
	must.True(t, anywhere.AccessibleFrom(zoneB))

	inA := &CSIVolume{Topologies: []*CSITopology{zoneA}}
	must.True(t, inA.AccessibleFrom(zoneA))
	must.True(t, inA.AccessibleFrom(zoneArack1), must.Sprint("a node with more segments is inside zone a"))
	must.False(t, inA.AccessibleFrom(zoneB))
	must.False(t, inA.AccessibleFrom(nil), must.Sprint("a node that reports no topology is not in zone a"))

	inRack := &CSIVolume{Topologies: []*CSITopology{zoneArack1}}
	must.False(t, inRack.AccessibleFrom(zoneA), must.Sprint("zone a alone does not place a node in rack r1"))

	either := &CSIVolume{Topologies: []*CSITopology{zoneB, zoneArack1}}
	must.True(t, either.AccessibleFrom(zoneB))
	must.True(t, either.AccessibleFrom(zoneArack1))
	must.False(t, either.AccessibleFrom(zoneA))
}

func TestCSITopology_String(t *testing.T) {
	must.EqOp(t, "{rack=r1, zone=a}", (&CSITopology{Segments: map[string]string{"zone": "a", "rack": "r1"}}).String())
	must.EqOp(t, "{}", (*CSITopology)(nil).String())
}

// Preferred topologies must lie within the required ones (CSI's rule for
// requisite and preferred); without required ones, any will do.
func TestCSIVolume_Validate_PreferredWithinRequired(t *testing.T) {
	zone := func(segs ...string) *CSITopology {
		m := map[string]string{}
		for i := 0; i+1 < len(segs); i += 2 {
			m[segs[i]] = segs[i+1]
		}
		return &CSITopology{Segments: m}
	}
	v := &CSIVolume{ID: "data", PluginID: "hp", ExternalID: "e", RequestedCapabilities: []*CSIVolumeCapability{
		{AccessMode: CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: CSIVolumeAttachmentModeFilesystem}},
		Topologies: []*CSITopology{zone("zone", "a"), zone("zone", "b")}}
	v.PreferredTopologies = []*CSITopology{zone("zone", "b"), zone("zone", "a", "rack", "r1")}
	must.NoError(t, v.Validate())
	v.PreferredTopologies = []*CSITopology{zone("zone", "c")}
	must.ErrorContains(t, v.Validate(), `volume "data": preferred topology 1 {zone=c} is outside every required topology`)
	v.Topologies = nil
	must.NoError(t, v.Validate())
	v.PreferredTopologies = []*CSITopology{nil}
	must.ErrorContains(t, v.Validate(), "preferred topology 1 is null")
}
