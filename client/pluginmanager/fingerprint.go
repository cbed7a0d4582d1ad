package pluginmanager

import (
	"context"
	"fmt"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/structs"
)

// healthyDescription is a healthy instance's HealthDescription.
const healthyDescription = "healthy"

// identity is what a plugin's identity service said in one round.
type identity struct {
	provider string
	version  string
	caps     *csi.PluginCapabilities
}

// identify calls GetPluginInfo, GetPluginCapabilities and Probe. It
// returns what it learned even when a later call failed, so that the
// instance's info keeps naming its provider. A plugin that says it is not
// ready yet is unhealthy: it may not serve volume calls.
func identify(ctx context.Context, c *csi.Client, pluginID string) (*identity, error) {
	name, version, err := c.PluginInfo(ctx)
	if err != nil {
		return nil, err
	}
	id := &identity{provider: name, version: version}
	if id.caps, err = c.PluginCapabilities(ctx); err != nil {
		return nil, err
	}
	ready, err := c.Probe(ctx)
	if err != nil {
		return id, err
	}
	if !ready {
		return id, fmt.Errorf("plugin %q: Probe: the plugin is not ready yet", pluginID)
	}
	return id, nil
}

// fingerprintNode calls NodeGetInfo and NodeGetCapabilities.
func fingerprintNode(ctx context.Context, c *csi.Client) (*structs.CSINodeInfo, error) {
	info, err := c.NodeGetInfo(ctx)
	if err != nil {
		return nil, err
	}
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return nil, err
	}
	caps.Apply(info)
	return info, nil
}

// fingerprintController checks that the plugin serves the controller
// service it was declared to provide, then calls ControllerGetCapabilities.
func fingerprintController(ctx context.Context, c *csi.Client, id *identity, pluginID string) (*structs.CSIControllerInfo, error) {
	if !id.caps.ControllerService {
		return nil, fmt.Errorf("plugin %q: GetPluginCapabilities: the plugin is declared a controller but does not advertise CONTROLLER_SERVICE", pluginID)
	}
	return c.ControllerGetCapabilities(ctx)
}

// sideInfo builds one side's info from the previous round's (whose
// provider and capabilities it keeps when this round could not learn them)
// and this round's results. UpdateTime is the manager's to set.
func sideInfo(prev *structs.CSIInfo, p *dynamicplugins.PluginInfo, id *identity, err error) *structs.CSIInfo {
	info := prev.Copy()
	if info == nil {
		info = &structs.CSIInfo{}
	}
	info.PluginID, info.AllocID = p.ID, p.AllocID
	if id != nil {
		info.Provider, info.ProviderVersion = id.provider, id.version
		info.RequiresControllerPlugin = id.caps.ControllerService
		info.RequiresTopologies = id.caps.VolumeAccessibilityConstraints
	}
	if err != nil {
		info.Healthy, info.HealthDescription = false, err.Error()
	} else {
		info.Healthy, info.HealthDescription = true, healthyDescription
	}
	return info
}
