package allocrunner

import (
	"context"
	"errors"
	"github.com/berth-csi/berth/client/drivers/docker"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// RPCer calls the servers: the client's RPC, with failover.
type RPCer interface {
	RPC(ctx context.Context, method string, args, reply any) error
}

// VolumeMounter mounts CSI volumes on this node: *volumemanager.Manager.
type VolumeMounter interface {
	MountVolume(ctx context.Context, req *volumemanager.MountRequest) (*volumemanager.MountResult, error)
	UnmountVolume(ctx context.Context, allocID, volumeID, pluginID, externalVolumeID string) error
}

var _ VolumeMounter = (*volumemanager.Manager)(nil)

// Config is what a Runner needs.
type Config struct {
	// Alloc is the allocation as the servers sent it, with its job.
	Alloc *structs.Allocation
	// NodeID is this node's ID, NodeName its name (tasks get both as
	// BERTH_NODE_ID and BERTH_NODE_NAME).
	NodeID   string
	NodeName string
	// DataDir is the client's data dir: the alloc dir is
	// DataDir/alloc/<alloc ID>, task handles DataDir/client/allocs.
	DataDir string
	// Servers confirms claims (CSIVolume.Get, CSIVolume.Claim).
	Servers RPCer
	// Volumes mounts and unmounts the alloc's volumes; nil refuses allocs
	// with volumes.
	Volumes VolumeMounter
	// ExternalNodeID is the plugin's own ID for this node (its NodeGetInfo
	// answer), false when the plugin has no node instance here.
	ExternalNodeID func(pluginID string) (string, bool)
	// OnUpdate receives the alloc's client view (ID, ClientStatus,
	// ClientDescription, TaskStates) after each change, in order, called
	// with the runner's lock held: it must not call back into the runner.
	OnUpdate func(*structs.Allocation)
	// Plugins registers the alloc's plugin tasks when they are healthy;
	// nil refuses allocs with plugin tasks.
	Plugins PluginRegistry
	// PluginProbeInterval is how often a running plugin task is probed
	// (DefaultPluginProbeInterval when zero).
	PluginProbeInterval time.Duration
	// ClaimTimeout bounds how long a claim is retried while the servers
	// are unavailable.
	ClaimTimeout time.Duration
	// AllowRootTasks is the client's allow_root_tasks: without it, an
	// alloc with a task that would run as root fails before it starts.
	AllowRootTasks bool
	// Cores hands out the node's cores (a task's cpuset); nil leaves
	// cpusets alone.
	Cores *Cores
	// CoreMHz is the compute of one of the node's cores: what a task's
	// cores stand for as a CPU weight.
	CoreMHz int
	// Users is who the client's exec tasks may run as besides root
	// (client { user }); nil allows any user the node has.
	Users *structs.TaskUserPolicy
	// Docker runs docker tasks; nil when the client has no docker driver
	// (an alloc with a docker task fails, saying so).
	Docker *docker.Driver
	Logger hclog.Logger
}

// Validate names what is missing.
func (c *Config) Validate() error {
	var errs []error
	if c.Alloc == nil || c.Alloc.ID == "" {
		errs = append(errs, errors.New("allocrunner: an allocation with an ID is required"))
	}
	if c.NodeID == "" || c.DataDir == "" {
		errs = append(errs, errors.New("allocrunner: a node ID and a data dir are required"))
	}
	if c.Servers == nil || c.ExternalNodeID == nil {
		errs = append(errs, errors.New("allocrunner: servers and an external node ID lookup are required"))
	}
	return errors.Join(errs...)
}
