package fleet

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/berth-csi/berth/structs"
)

// The two CSI plugins every simulated node reports.
const (
	// MonoPlugin is a monolith: controller and node side, both healthy.
	MonoPlugin = "fleet-mono"
	// NodePlugin is node side only; the flapping nodes flap its health.
	NodePlugin = "fleet-node"
)

// MetaCut is the node meta key whose value is "true" on the nodes that
// the simulator will cut off (Options.Cut): the claims job's constraint
// places its allocations there.
const MetaCut = "fleet_cut"

// Node is one simulated client node.
type Node struct {
	Index  int
	ID     string
	Name   string
	Secret string // sent as the AuthToken of every call for the node
	Flaps  bool   // flaps NodePlugin's health
	Cut    bool   // stops heartbeating at Fleet.Cut

	conn *conn
	stop chan struct{} // closed by Fleet.Cut

	// Written by the node's own loops, read by the measurements.
	ttl       atomic.Int64 // the TTL the last answer handed out (ns)
	lastBeat  atomic.Int64 // when the last answered heartbeat was sent (unix ns)
	unhealthy atomic.Bool  // NodePlugin is unhealthy as last sent
}

// TTL is the heartbeat TTL the node's last answer handed out.
func (n *Node) TTL() time.Duration { return time.Duration(n.ttl.Load()) }

// LastBeat is when the node sent its last heartbeat that was answered
// (its registration until then).
func (n *Node) LastBeat() time.Time { return time.Unix(0, n.lastBeat.Load()) }

// register is the node's registration, as a client agent sends it: its
// identity, status ready, its whole fingerprint.
func (n *Node) register() *structs.NodeRegisterRequest {
	now := time.Now()
	return &structs.NodeRegisterRequest{
		Node: &structs.Node{
			ID:         n.ID,
			Name:       n.Name,
			Datacenter: "dc1",
			HTTPAddr:   fmt.Sprintf("%s:%d", fleetAddr, 20000+n.Index%40000),
			Status:     structs.NodeStatusReady,
			CSIControllerPlugins: map[string]*structs.CSIInfo{
				MonoPlugin: monoInfo(now, true),
			},
			CSINodePlugins: map[string]*structs.CSIInfo{
				MonoPlugin: n.nodeInfo(MonoPlugin, now, true),
				NodePlugin: n.nodeInfo(NodePlugin, now, true),
			},
			Drivers: map[string]*structs.DriverInfo{
				structs.DriverExec:   {Detected: true, Healthy: true, HealthDescription: "healthy", UpdateTime: now},
				structs.DriverDocker: {Detected: true, Healthy: true, HealthDescription: "healthy", UpdateTime: now},
			},
			Resources: &structs.NodeResources{CPU: 8000, Cores: 4, MemoryMB: 16384},
			Reserved:  &structs.NodeResources{MemoryMB: 512},
			Attributes: map[string]string{
				"kernel.name": "linux", "cpu.arch": "amd64", "unique.hostname": n.Name,
			},
			Meta:      map[string]string{MetaCut: fmt.Sprint(n.Cut)},
			TaskUsers: &structs.TaskUserPolicy{},
		},
		WriteRequest: structs.WriteRequest{AuthToken: n.Secret},
	}
}

// monoInfo is MonoPlugin's controller side.
func monoInfo(now time.Time, healthy bool) *structs.CSIInfo {
	return &structs.CSIInfo{PluginID: MonoPlugin, Healthy: healthy, HealthDescription: "healthy", UpdateTime: now,
		Provider: "fleet.berth", ProviderVersion: "1.0.0", RequiresControllerPlugin: true,
		ControllerInfo: &structs.CSIControllerInfo{SupportsCreateDelete: true, SupportsAttachDetach: true}}
}

// nodeInfo is the node side of plugin id on the node.
func (n *Node) nodeInfo(id string, now time.Time, healthy bool) *structs.CSIInfo {
	desc := "healthy"
	if !healthy {
		desc = "probe failed: the simulator flapped it"
	}
	return &structs.CSIInfo{PluginID: id, Healthy: healthy, HealthDescription: desc, UpdateTime: now,
		Provider: "fleet.berth", ProviderVersion: "1.0.0", RequiresControllerPlugin: id == MonoPlugin,
		NodeInfo: &structs.CSINodeInfo{ID: n.Name, MaxVolumes: 64}}
}

// flap is the fingerprint delta that sets NodePlugin's health on the
// node, with its event, as a client's node updater reports a probe's
// change.
func (n *Node) flap(healthy bool) *structs.NodeFingerprintRequest {
	now := time.Now()
	ev := &structs.NodeEvent{Subsystem: "CSI", Message: fmt.Sprintf("plugin %s: node healthy %t", NodePlugin, healthy), Timestamp: now}
	return &structs.NodeFingerprintRequest{
		NodeID:       n.ID,
		Plugins:      []*structs.NodePluginUpdate{{PluginID: NodePlugin, Node: n.nodeInfo(NodePlugin, now, healthy)}},
		Events:       []*structs.NodeEvent{ev},
		WriteRequest: structs.WriteRequest{AuthToken: n.Secret},
	}
}

// heartbeat is the node's heartbeat: status ready, nothing else.
func (n *Node) heartbeat() *structs.NodeUpdateStatusRequest {
	return &structs.NodeUpdateStatusRequest{NodeID: n.ID, Status: structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{AuthToken: n.Secret}}
}

// Select returns the nodes for which keep is true.
func (f *Fleet) Select(keep func(*Node) bool) []*Node {
	var out []*Node
	for _, n := range f.Nodes {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}
