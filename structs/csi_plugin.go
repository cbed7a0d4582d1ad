package structs

// CSIPlugin is a plugin across the cluster: every controller and node
// instance that reports it, keyed by node ID. The state store keeps the
// instances; the counts and Allocations are joined in on read
// (CSIPluginDenormalize): an instance is healthy only when it says so and
// its node is ready.
type CSIPlugin struct {
	ID                 string
	Provider           string
	Version            string
	ControllerRequired bool

	Controllers map[string]*CSIInfo // node ID -> instance
	Nodes       map[string]*CSIInfo // node ID -> instance

	// Derived on read.
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	Allocations         []*AllocListStub

	CreateIndex uint64
	ModifyIndex uint64
}

// NewCSIPlugin returns an empty plugin row.
func NewCSIPlugin(id string, index uint64) *CSIPlugin {
	return &CSIPlugin{
		ID:          id,
		Controllers: map[string]*CSIInfo{},
		Nodes:       map[string]*CSIInfo{},
		CreateIndex: index,
		ModifyIndex: index,
	}
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
	return p == nil || len(p.Controllers) == 0 && len(p.Nodes) == 0
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
	if p == nil || !p.ControllerRequired {
		return false
	}
	for _, c := range p.Controllers {
		if c != nil && c.ControllerInfo != nil && c.ControllerInfo.SupportsAttachDetach {
			return true
		}
	}
	return false
}
