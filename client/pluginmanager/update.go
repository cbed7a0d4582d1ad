package pluginmanager

import (
	"fmt"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Update is the current state of one plugin instance on this node, sent
// whenever its info or health changed. Controller and Node are the full
// current info of each side; a side is nil when the plugin does not
// provide it, and both are nil once the plugin was deregistered (the
// servers then remove the instance). Event is set when the plugin's health
// changed (or it was deregistered).
type Update struct {
	PluginID   string
	Controller *structs.CSIInfo
	Node       *structs.CSIInfo
	Event      *structs.NodeEvent
}

// Copy returns a deep copy.
func (u Update) Copy() Update {
	c := u
	c.Controller = u.Controller.Copy()
	c.Node = u.Node.Copy()
	if u.Event != nil {
		ev := *u.Event
		if u.Event.Details != nil {
			ev.Details = make(map[string]string, len(u.Event.Details))
			for k, v := range u.Event.Details {
				ev.Details[k] = v
			}
		}
		c.Event = &ev
	}
	return c
}

// Healthy reports whether every side the plugin provides is healthy, and
// if not, why.
func (u Update) Healthy() (bool, string) {
	for _, side := range []*structs.CSIInfo{u.Controller, u.Node} {
		if side != nil && !side.Healthy {
			return false, side.HealthDescription
		}
	}
	return true, ""
}

// EventSubsystem is the Subsystem of the node events this package emits.
const EventSubsystem = "CSI"

func pluginEvent(id, message string, now time.Time) *structs.NodeEvent {
	return &structs.NodeEvent{
		Subsystem: EventSubsystem,
		Message:   message,
		Details:   map[string]string{"plugin": id},
		Timestamp: now,
	}
}

func healthEvent(id string, healthy bool, reason string, now time.Time) *structs.NodeEvent {
	if healthy {
		return pluginEvent(id, fmt.Sprintf("plugin %q became healthy", id), now)
	}
	return pluginEvent(id, fmt.Sprintf("plugin %q became unhealthy: %s", id, reason), now)
}

// infoEqual compares two fingerprints, ignoring UpdateTime.
func infoEqual(a, b *structs.CSIInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.PluginID != b.PluginID || a.AllocID != b.AllocID ||
		a.Healthy != b.Healthy || a.HealthDescription != b.HealthDescription ||
		a.Provider != b.Provider || a.ProviderVersion != b.ProviderVersion ||
		a.RequiresControllerPlugin != b.RequiresControllerPlugin || a.RequiresTopologies != b.RequiresTopologies {
		return false
	}
	return controllerInfoEqual(a.ControllerInfo, b.ControllerInfo) && nodeInfoEqual(a.NodeInfo, b.NodeInfo)
}

func controllerInfoEqual(a, b *structs.CSIControllerInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func nodeInfoEqual(a, b *structs.CSINodeInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	ac, bc := *a, *b
	ac.AccessibleTopology, bc.AccessibleTopology = nil, nil
	return ac == bc && a.AccessibleTopology.Equal(b.AccessibleTopology)
}
