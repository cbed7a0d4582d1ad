package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// zonedNode is a ready node whose hostpath instance is in zone.
func (w *world) zonedNode(id, zone string) {
	w.t.Helper()
	n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
	info := n.CSINodePlugins["hostpath"]
	if info.NodeInfo == nil {
		info.NodeInfo = &structs.CSINodeInfo{ID: id}
	}
	info.NodeInfo.AccessibleTopology = &structs.CSITopology{Segments: map[string]string{"zone": zone}}
	w.upsertNode(n)
}

// A volume reachable from three zones, preferring c then b: its writer
// goes to c's node while c can take it, to b's when c's node is gone, and
// to a's, still within what is required, when neither preferred node is
// there; without preferences, to the first node by ID.
func TestPlanner_PreferredTopologies(t *testing.T) {
	zone := func(z string) *structs.CSITopology {
		return &structs.CSITopology{Segments: map[string]string{"zone": z}}
	}
	for _, tc := range []struct {
		name      string
		preferred []*structs.CSITopology
		down      []string
		want      string
	}{
		{"first preferred", []*structs.CSITopology{zone("c"), zone("b")}, nil, "node-c"},
		{"second preferred", []*structs.CSITopology{zone("c"), zone("b")}, []string{"node-c"}, "node-b"},
		{"the rest of required", []*structs.CSITopology{zone("c"), zone("b")}, []string{"node-c", "node-b"}, "node-a"},
		{"no preference", nil, nil, "node-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			for _, z := range []string{"a", "b", "c"} {
				w.zonedNode("node-"+z, z)
			}
			for _, id := range tc.down {
				w.nodeStatus(id, structs.NodeStatusDown)
			}
			vol := statetest.Volume("data", "hostpath")
			vol.Topologies = []*structs.CSITopology{zone("a"), zone("b"), zone("c")}
			vol.PreferredTopologies = tc.preferred
			must.NoError(t, w.st.UpsertCSIVolume(w.next(), []*structs.CSIVolume{vol}))
			w.run(writerJob("db", "data"))
			placed := w.allocs("db", live)
			must.Len(t, 1, placed)
			must.Eq(t, tc.want, placed[0].NodeID)
		})
	}
}

// A writer that failed on the first preferred zone's node is rescheduled
// to the second preferred zone's, not to the first node by ID: the
// preferences order rescheduling too (the failed node last).
func TestPlanner_PreferredTopologies_Reschedule(t *testing.T) {
	zone := func(z string) *structs.CSITopology {
		return &structs.CSITopology{Segments: map[string]string{"zone": z}}
	}
	w := newWorld(t)
	for _, z := range []string{"a", "b", "c"} {
		w.zonedNode("node-"+z, z)
	}
	vol := statetest.Volume("data", "hostpath")
	vol.Topologies = []*structs.CSITopology{zone("a"), zone("b"), zone("c")}
	vol.PreferredTopologies = []*structs.CSITopology{zone("c"), zone("b")}
	must.NoError(t, w.st.UpsertCSIVolume(w.next(), []*structs.CSIVolume{vol}))
	first := w.run(writerJob("db", "data")).Plan.Allocs[0]
	must.Eq(t, "node-c", first.NodeID)
	w.clientStatus(first.ID, structs.AllocClientStatusFailed)
	w.free("data", first.ID)
	w.clock.Advance(30 * time.Second)
	res := w.auto("db")
	must.SliceLen(t, 1, res.Plan.Allocs)
	must.Eq(t, "node-b", res.Plan.Allocs[0].NodeID)
}
