package structs

import "time"

// CSIPlugin is a plugin across the cluster. Its row holds counts: how
// many controller and node instances report it, and how many of them are
// healthy (the instance says so and its node is ready). The state store
// moves the counts with the node rows, in the same transaction, so no
// read walks the nodes. The instances themselves live on the node rows
// (Node.CSIControllerPlugins, CSINodePlugins); a read of one plugin joins
// them in, a page at a time, with their allocations.
type CSIPlugin struct {
	ID                 string
	Provider           string // as the newest report (UpdateTime) says
	Version            string
	ControllerRequired bool
	// ProviderNode and ProviderUpdated name the report Provider, Version
	// and ControllerRequired come from, so that a newer report replaces
	// it without a walk of the nodes. Kept in raft, not shown.
	ProviderNode    string    `codec:"ProviderNode" json:"-"`
	ProviderUpdated time.Time `codec:"ProviderUpdated" json:"-"`

	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	// ControllersPublishing counts the controller instances that offer
	// PUBLISH_UNPUBLISH_VOLUME, healthy or not.
	ControllersPublishing int

	// Joined in on read (state: CSIPluginWithInstances, and a page of
	// them for Get); nil in the stored row.
	Controllers map[string]*CSIInfo // node ID -> instance
	Nodes       map[string]*CSIInfo // node ID -> instance
	Allocations []*AllocListStub

	CreateIndex uint64
	ModifyIndex uint64
}

// NewCSIPlugin returns an empty plugin row.
func NewCSIPlugin(id string, index uint64) *CSIPlugin {
	return &CSIPlugin{ID: id, CreateIndex: index, ModifyIndex: index}
}

// Copy returns a deep copy.
func (p *CSIPlugin) Copy() *CSIPlugin {
	if p == nil {
		return nil
	}
	c := *p
	c.Controllers = copyCSIInfoMap(p.Controllers)
	c.Nodes = copyCSIInfoMap(p.Nodes)
	if p.Allocations != nil {
		c.Allocations = make([]*AllocListStub, len(p.Allocations))
		for i, a := range p.Allocations {
			ac := *a
			c.Allocations[i] = &ac
		}
	}
	return &c
}

// IsEmpty reports whether no instance reports the plugin.
func (p *CSIPlugin) IsEmpty() bool {
	return p == nil || p.ControllersExpected == 0 && p.NodesExpected == 0
}

// Stub returns the list form of the plugin.
func (p *CSIPlugin) Stub() *CSIPluginListStub {
	return &CSIPluginListStub{
		ID:                  p.ID,
		Provider:            p.Provider,
		ControllerRequired:  p.ControllerRequired,
		ControllersHealthy:  p.ControllersHealthy,
		ControllersExpected: p.ControllersExpected,
		NodesHealthy:        p.NodesHealthy,
		NodesExpected:       p.NodesExpected,
		CreateIndex:         p.CreateIndex,
		ModifyIndex:         p.ModifyIndex,
	}
}

// CSIPluginListStub is a plugin as lists show it.
type CSIPluginListStub struct {
	ID                  string
	Provider            string
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	CreateIndex         uint64
	ModifyIndex         uint64
}

// PublishesThroughController reports whether the plugin publishes volumes
// to nodes through a controller (ControllerPublish/Unpublish): it requires
// a controller and one of its instances offers PUBLISH_UNPUBLISH_VOLUME.
// False for nil.
func (p *CSIPlugin) PublishesThroughController() bool {
	return p != nil && p.ControllerRequired && p.ControllersPublishing > 0
}
