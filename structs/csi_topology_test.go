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
