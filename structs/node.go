package structs

import "time"

// Node statuses.
const (
	NodeStatusInit  = "initializing"
	NodeStatusReady = "ready"
	NodeStatusDown  = "down"
)

// ValidNodeStatus reports whether s is a status a node may be set to.
func ValidNodeStatus(s string) bool {
	switch s {
	case NodeStatusInit, NodeStatusReady, NodeStatusDown:
		return true
	}
	return false
}

// Node is a client agent's machine. Its CSI fingerprint is split in two
// maps keyed by plugin ID: a monolith plugin appears in both.
type Node struct {
	ID         string
	Name       string
	Datacenter string
	HTTPAddr   string
	Status     string

	StatusDescription string
	StatusUpdatedAt   int64 // unix nanoseconds, stamped by the RPC handler

	// SecretHash is the SHA-256 (hex) of the node's secret, which its
	// client sends as the AuthToken of every call it makes for the node.
	// The servers keep only the hash; it never leaves them (json:"-").
	SecretHash string `codec:"SecretHash" json:"-"`

	CSIControllerPlugins map[string]*CSIInfo
	CSINodePlugins       map[string]*CSIInfo

	// AllowRootTasks is the client's allow_root_tasks: whether it runs
	// tasks as root (CSI plugin tasks, user = "root"). The scheduler
	// places a group with such a task only where it is set.
	AllowRootTasks bool

	// Drivers is the health of the task drivers the client runs, by
	// driver name ("exec", "docker"), as it last fingerprinted them. The
	// scheduler places a task of a driver other than exec only where it
	// is detected and healthy (DriverUsable).
	Drivers map[string]*DriverInfo `json:",omitempty"`

	// TaskUsers is who the node's tasks may run as (client { user }), nil
	// for a client from before it was reported.
	TaskUsers *TaskUserPolicy `json:",omitempty"`

	// Resources is what the client found the node has (CPU compute and
	// cores, memory), Reserved what its agent config keeps for the node
	// itself (client { reserved }); the scheduler places on it only what
	// fits in the difference (Capacity). Nil Resources: a client from
	// before resources were reported, not limited.
	Resources *NodeResources `json:",omitempty"`
	Reserved  *NodeResources `json:",omitempty"`
	// Attributes are what the client fingerprinted of the node
	// (kernel.name, cpu.arch, unique.hostname, ...), Meta what its agent
	// config says of it (client { meta }): constraints and affinities
	// read them as ${attr.NAME} and ${meta.NAME}.
	Attributes map[string]string `json:",omitempty"`
	Meta       map[string]string `json:",omitempty"`
	// Allocated is what the node's allocations take of what it offers,
	// set in a read's answer (Node.Get) only: never stored.
	Allocated *AllocatedResources `json:",omitempty"`

	// SchedulingEligibility says whether the scheduler may place new
	// allocations here: NodeSchedulingEligible or NodeSchedulingIneligible
	// (see Schedulable). The servers own it; a registration keeps it.
	SchedulingEligibility string
	// DrainStrategy is the node's drain under way, nil when none is.
	DrainStrategy *DrainStrategy `json:",omitempty"`

	Events []*NodeEvent

	CreateIndex uint64
	ModifyIndex uint64
}

// NodeEvent is something that happened to a node, for people to read.
type NodeEvent struct {
	Message   string
	Subsystem string
	Details   map[string]string
	Timestamp time.Time
}

// Ready reports whether the node can run work.
func (n *Node) Ready() bool { return n != nil && n.Status == NodeStatusReady }

// Copy returns a deep copy.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.CSIControllerPlugins = copyCSIInfoMap(n.CSIControllerPlugins)
	c.CSINodePlugins = copyCSIInfoMap(n.CSINodePlugins)
	c.Drivers = copyDriverInfoMap(n.Drivers)
	c.Resources, c.Reserved = n.Resources.Copy(), n.Reserved.Copy()
	c.Attributes, c.Meta = copyStringMap(n.Attributes), copyStringMap(n.Meta)
	c.TaskUsers = n.TaskUsers.Copy()
	c.DrainStrategy = n.DrainStrategy.Copy()
	if n.Events != nil {
		c.Events = make([]*NodeEvent, len(n.Events))
		for i, e := range n.Events {
			ec := *e
			ec.Details = copyStringMap(e.Details)
			c.Events[i] = &ec
		}
	}
	return &c
}

// Stub returns the list form of the node.
func (n *Node) Stub() *NodeListStub {
	return &NodeListStub{
		ID:                    n.ID,
		Name:                  n.Name,
		Datacenter:            n.Datacenter,
		Status:                n.Status,
		StatusDescription:     n.StatusDescription,
		SchedulingEligibility: n.SchedulingEligibility,
		Drain:                 n.DrainStrategy != nil,
		CSIControllerPlugins:  copyCSIInfoMap(n.CSIControllerPlugins),
		CSINodePlugins:        copyCSIInfoMap(n.CSINodePlugins),
		CreateIndex:           n.CreateIndex,
		ModifyIndex:           n.ModifyIndex,
	}
}

// NodeListStub is a node as lists show it.
type NodeListStub struct {
	ID                    string
	Name                  string
	Datacenter            string
	Status                string
	StatusDescription     string
	SchedulingEligibility string
	Drain                 bool // a drain is under way
	CSIControllerPlugins  map[string]*CSIInfo
	CSINodePlugins        map[string]*CSIInfo
	CreateIndex           uint64
	ModifyIndex           uint64
}

func copyStringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
