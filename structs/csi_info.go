package structs

import (
	"strings"
	"time"
)

// CSIPluginType says which CSI services a plugin instance provides.
type CSIPluginType string

const (
	CSIPluginTypeController CSIPluginType = "controller"
	CSIPluginTypeNode       CSIPluginType = "node"
	CSIPluginTypeMonolith   CSIPluginType = "monolith"
)

// CSIInfo is one plugin instance on one node, as the client fingerprinted
// it. ControllerInfo is set in a node's CSIControllerPlugins entry and
// NodeInfo in its CSINodePlugins entry.
type CSIInfo struct {
	PluginID                 string
	AllocID                  string // the plugin task's allocation; empty for a plugin run outside berth
	Healthy                  bool
	HealthDescription        string
	UpdateTime               time.Time
	Provider                 string // GetPluginInfo name
	ProviderVersion          string // GetPluginInfo vendor_version
	RequiresControllerPlugin bool
	RequiresTopologies       bool

	ControllerInfo *CSIControllerInfo `json:",omitempty"`
	NodeInfo       *CSINodeInfo       `json:",omitempty"`
}

// Copy returns a deep copy.
func (c *CSIInfo) Copy() *CSIInfo {
	if c == nil {
		return nil
	}
	n := *c
	n.ControllerInfo = c.ControllerInfo.Copy()
	n.NodeInfo = c.NodeInfo.Copy()
	return &n
}

// NodeSideChecked is the node side's info as the servers keep it: an
// instance without NodeGetInfo's answer (a plugin that is not up yet) is
// unhealthy, and its description says why, so that one plugin down never
// hides a node's other plugins. The receiver is not changed.
func (c *CSIInfo) NodeSideChecked() *CSIInfo {
	if c == nil || c.NodeInfo != nil {
		return c
	}
	n := c.Copy()
	n.Healthy = false
	why := "no node info: NodeGetInfo has not answered"
	if c.HealthDescription != "" && !c.Healthy {
		why += " (" + c.HealthDescription + ")"
	}
	n.HealthDescription = why
	return n
}

// CSIControllerInfo is what a controller instance can do.
type CSIControllerInfo struct {
	SupportsCreateDelete             bool
	SupportsAttachDetach             bool
	SupportsListVolumes              bool
	SupportsGetCapacity              bool
	SupportsCreateDeleteSnapshot     bool
	SupportsListSnapshots            bool
	SupportsClone                    bool
	SupportsReadOnlyAttach           bool
	SupportsExpand                   bool
	SupportsListVolumesAttachedNodes bool
	SupportsCondition                bool
	SupportsGet                      bool
}

// Copy returns a copy.
func (c *CSIControllerInfo) Copy() *CSIControllerInfo {
	if c == nil {
		return nil
	}
	n := *c
	return &n
}

// CSINodeInfo is what a node instance reported of its node.
type CSINodeInfo struct {
	ID                      string // the plugin's own node ID, passed to ControllerPublish
	MaxVolumes              int64
	AccessibleTopology      *CSITopology `json:",omitempty"`
	RequiresNodeStageVolume bool
	SupportsStats           bool
	SupportsExpand          bool
	SupportsCondition       bool
}

// Copy returns a deep copy.
func (c *CSINodeInfo) Copy() *CSINodeInfo {
	if c == nil {
		return nil
	}
	n := *c
	n.AccessibleTopology = c.AccessibleTopology.Copy()
	return &n
}

// CSITopology is a set of topology segments (zone = "a", rack = "r1").
type CSITopology struct {
	Segments map[string]string
}

// Copy returns a deep copy.
func (t *CSITopology) Copy() *CSITopology {
	if t == nil {
		return nil
	}
	return &CSITopology{Segments: copyStringMap(t.Segments)}
}

// Equal reports whether two topologies have the same segments.
func (t *CSITopology) Equal(o *CSITopology) bool {
	if t == nil || o == nil {
		return t == o
	}
	if len(t.Segments) != len(o.Segments) {
		return false
	}
	for k, v := range t.Segments {
		if ov, ok := o.Segments[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// String shows the segments in key order: {rack=r1, zone=a}.
func (t *CSITopology) String() string {
	if t == nil {
		return "{}"
	}
	keys := make([]string, 0, len(t.Segments))
	for k := range t.Segments {
		keys = append(keys, k)
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + t.Segments[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Contains reports whether a node in topology node is in this topology:
// node has every segment of t, with the same value. An empty topology
// contains every node.
func (t *CSITopology) Contains(node *CSITopology) bool {
	if t == nil {
		return true
	}
	for k, v := range t.Segments {
		if node == nil || node.Segments[k] != v {
			return false
		}
	}
	return true
}

// AccessibleFrom reports whether a node in topology node can reach the
// volume: the volume has no topologies, or one of them contains the node.
func (v *CSIVolume) AccessibleFrom(node *CSITopology) bool {
	if len(v.Topologies) == 0 {
		return true
	}
	for _, t := range v.Topologies {
		if t.Contains(node) {
			return true
		}
	}
	return false
}

// PreferenceRank is where a node in topology node stands among the
// volume's preferred topologies: the index of the first that contains it,
// len(PreferredTopologies) when none does (or it has none).
func (v *CSIVolume) PreferenceRank(node *CSITopology) int {
	for i, t := range v.PreferredTopologies {
		if t.Contains(node) {
			return i
		}
	}
	return len(v.PreferredTopologies)
}

func copyCSIInfoMap(m map[string]*CSIInfo) map[string]*CSIInfo {
	if m == nil {
		return nil
	}
	c := make(map[string]*CSIInfo, len(m))
	for k, v := range m {
		c[k] = v.Copy()
	}
	return c
}
