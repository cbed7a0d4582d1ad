package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestServer_PreferNear_OnlyInstancesThatReachTheVolume: a controller call
// about a volume goes to the claiming node's instance first, then to
// instances inside the volume's topology, and never to one outside it.
func TestServer_PreferNear_OnlyInstancesThatReachTheVolume(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	zones := map[string]string{"node-a1": "a", "node-a2": "a", "node-b": "b"}
	for id, zone := range zones {
		n := statetest.NodeWithPlugin(id, "hostpath", true, true, true)
		n.CSINodePlugins["hostpath"].NodeInfo.AccessibleTopology = &structs.CSITopology{Segments: map[string]string{"zone": zone}}
		must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{}))
	}
	nodes, err := s.controllerNodes("hostpath", capAttach.has, capAttach.name, 0)
	must.NoError(t, err)
	must.Eq(t, []string{"node-a1", "node-a2", "node-b"}, nodes)

	inA := &structs.CSIVolume{ID: "v", Topologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}}}
	got, err := s.preferNear(append([]string(nil), nodes...), controllerCall{plugin: "hostpath", volume: inA, near: "node-a2"})
	must.NoError(t, err)
	must.Eq(t, []string{"node-a2", "node-a1"}, got, must.Sprint("the claiming node first; zone b never"))

	anywhere := &structs.CSIVolume{ID: "w"}
	got, err = s.preferNear(append([]string(nil), nodes...), controllerCall{plugin: "hostpath", volume: anywhere, near: "node-b"})
	must.NoError(t, err)
	must.Eq(t, []string{"node-b", "node-a1", "node-a2"}, got)

	inC := &structs.CSIVolume{ID: "far", Topologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "c"}}}}
	_, err = s.preferNear(append([]string(nil), nodes...), controllerCall{plugin: "hostpath", volume: inC})
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.StrContains(t, err.Error(), `volume "far"`)
}

// A call with no near node and no topology lists only the first healthy
// instances by node ID, skipping the unhealthy and those on nodes that
// are down, not every instance of the fleet.
func TestServer_ControllerNodes_FirstHealthyInOrder(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	for i := range 12 {
		id := fmt.Sprintf("node-%02d", i)
		n := statetest.NodeWithPlugin(id, "hostpath", true, true, i != 1)
		if i == 2 {
			n.Status = structs.NodeStatusDown
		}
		must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{}))
	}
	nodes, err := s.controllerNodes("hostpath", capAny.has, capAny.name, maxControllerTries)
	must.NoError(t, err)
	must.Eq(t, []string{"node-00", "node-03", "node-04", "node-05", "node-06", "node-07", "node-08", "node-09"}, nodes)
	all, err := s.controllerNodes("hostpath", capAny.has, capAny.name, 0)
	must.NoError(t, err)
	must.SliceLen(t, 10, all)
}
