package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestCheckTopology_InstanceDownIsNotReady: a volume whose topology no
// healthy node instance is in is refused as a spec error (400) only when
// every instance of the plugin is healthy; while one is down (its task
// restarting, say) the answer is NotReady, naming the node, so a caller
// retries (chaos seed 7 saw registers refused "fix topology_request"
// during plugin restarts).
func TestCheckTopology_InstanceDownIsNotReady(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	register := func(id, zone string, healthy bool) {
		n := statetest.NodeWithPlugin(id, "hostpath", false, true, healthy)
		if healthy {
			n.CSINodePlugins["hostpath"].NodeInfo.AccessibleTopology = &structs.CSITopology{Segments: map[string]string{"zone": zone}}
		} else {
			n.CSINodePlugins["hostpath"].NodeInfo = nil // a plugin that does not answer reports no node info
		}
		must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{}))
	}
	inZone := func(zone string) *structs.CSIVolume {
		v := statetest.Volume("v-"+zone, "hostpath")
		v.Topologies = []*structs.CSITopology{{Segments: map[string]string{"zone": zone}}}
		return v
	}
	register("node-a", "a", true)
	register("node-b", "b", false)

	err := s.checkTopology(inZone("b"))
	must.ErrorIs(t, err, structs.ErrNotReady)
	must.StrContains(t, err.Error(), "node node-b")
	must.NoError(t, s.checkTopology(inZone("a")))

	register("node-b", "b", true)
	must.NoError(t, s.checkTopology(inZone("b")))
	err = s.checkTopology(inZone("c"))
	must.ErrorIs(t, err, structs.ErrBadRequest, must.Sprint("every instance is healthy: the spec is at fault"))
	must.StrContains(t, err.Error(), "fix topology_request.required")
}
