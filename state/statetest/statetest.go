package statetest

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// New returns an empty state store, abandoned when the test ends.
func New(t testing.TB) *state.StateStore {
	t.Helper()
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatalf("statetest: new state store: %v", err)
	}
	t.Cleanup(s.Abandon)
	return s
}

// Fixture values shared by the builders.
const (
	Datacenter      = "dc1"
	Provider        = "berth-hostpath"
	ProviderVersion = "0.1.0"
	JobID           = "example"
)

// Node returns a ready node with no plugins.
func Node(id string) *structs.Node {
	return &structs.Node{
		ID:         id,
		Name:       id,
		Datacenter: Datacenter,
		HTTPAddr:   "127.0.0.1:4746",
		Status:     structs.NodeStatusReady,
	}
}

// NodeWithPlugin returns a ready node running pluginID: a controller
// instance if controller, a node instance if node (both for a monolith),
// healthy or not.
func NodeWithPlugin(id, pluginID string, controller, node, healthy bool) *structs.Node {
	n := Node(id)
	info := func() *structs.CSIInfo {
		desc := "healthy"
		if !healthy {
			desc = "unhealthy"
		}
		return &structs.CSIInfo{
			PluginID:                 pluginID,
			Healthy:                  healthy,
			HealthDescription:        desc,
			Provider:                 Provider,
			ProviderVersion:          ProviderVersion,
			RequiresControllerPlugin: controller,
		}
	}
	if controller {
		c := info()
		c.ControllerInfo = &structs.CSIControllerInfo{SupportsAttachDetach: true}
		n.CSIControllerPlugins = map[string]*structs.CSIInfo{pluginID: c}
	}
	if node {
		c := info()
		c.NodeInfo = &structs.CSINodeInfo{ID: "ext-" + id, MaxVolumes: 10}
		n.CSINodePlugins = map[string]*structs.CSIInfo{pluginID: c}
	}
	return n
}

// Volume returns a volume of pluginID in the default namespace, with one
// capability: single-node-writer, file-system.
func Volume(id, pluginID string) *structs.CSIVolume {
	return &structs.CSIVolume{
		ID:         id,
		Namespace:  structs.DefaultNamespace,
		Name:       id,
		ExternalID: "ext-" + id,
		PluginID:   pluginID,
		RequestedCapabilities: []*structs.CSIVolumeCapability{{
			AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
			AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		}},
	}
}

// Alloc returns a running allocation of job JobID on nodeID.
func Alloc(id, nodeID string) *structs.Allocation {
	return &structs.Allocation{
		ID:            id,
		Namespace:     structs.DefaultNamespace,
		Name:          JobID + ".web[0]",
		JobID:         JobID,
		TaskGroup:     "web",
		NodeID:        nodeID,
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusRunning,
	}
}

// Job returns a service job in the default namespace with one group of one
// task.
func Job(id string) *structs.Job {
	return &structs.Job{
		ID:        id,
		Namespace: structs.DefaultNamespace,
		Name:      id,
		Type:      structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 1,
			Tasks: []*structs.Task{{Name: "web", Driver: "exec"}},
		}},
	}
}

// PluginJob returns a system job whose task runs pluginID as a monolith.
func PluginJob(id, pluginID string) *structs.Job {
	j := Job(id)
	j.Type = structs.JobTypeSystem
	j.TaskGroups[0].Tasks[0].CSIPluginConfig = &structs.TaskCSIPluginConfig{
		ID:       pluginID,
		Type:     structs.CSIPluginTypeMonolith,
		MountDir: "/csi",
	}
	return j
}
