package csi

import (
	"context"
	"errors"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// PluginCapabilities is what GetPluginCapabilities advertised; unknown
// capabilities are ignored.
type PluginCapabilities struct {
	ControllerService              bool
	VolumeAccessibilityConstraints bool
	OnlineExpansion                bool
	OfflineExpansion               bool
}

// PluginInfo returns the plugin's name and vendor version (GetPluginInfo).
// A plugin that returns an empty name fails the call: the spec requires
// one.
func (c *Client) PluginInfo(ctx context.Context) (name, version string, err error) {
	err = c.call(ctx, "GetPluginInfo", func(ctx context.Context) error {
		resp, err := c.identity.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
		if err != nil {
			return err
		}
		if resp.GetName() == "" {
			return errors.New("the plugin returned an empty name")
		}
		name, version = resp.GetName(), resp.GetVendorVersion()
		return nil
	})
	return name, version, err
}

// PluginCapabilities returns the plugin's service and expansion
// capabilities (GetPluginCapabilities).
func (c *Client) PluginCapabilities(ctx context.Context) (*PluginCapabilities, error) {
	caps := &PluginCapabilities{}
	err := c.call(ctx, "GetPluginCapabilities", func(ctx context.Context) error {
		resp, err := c.identity.GetPluginCapabilities(ctx, &csipb.GetPluginCapabilitiesRequest{})
		if err != nil {
			return err
		}
		for _, pc := range resp.GetCapabilities() {
			if s := pc.GetService(); s != nil {
				switch s.GetType() {
				case csipb.PluginCapability_Service_CONTROLLER_SERVICE:
					caps.ControllerService = true
				case csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:
					caps.VolumeAccessibilityConstraints = true
				}
			}
			if e := pc.GetVolumeExpansion(); e != nil {
				switch e.GetType() {
				case csipb.PluginCapability_VolumeExpansion_ONLINE:
					caps.OnlineExpansion = true
				case csipb.PluginCapability_VolumeExpansion_OFFLINE:
					caps.OfflineExpansion = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return caps, nil
}

// Probe asks whether the plugin is healthy and ready. Any error means
// unhealthy; FAILED_PRECONDITION is the plugin saying so itself (it is not
// healthy, or a dependency is missing). With no error, ready is false only
// while the plugin says it is still initialising; an unset ready means
// ready.
func (c *Client) Probe(ctx context.Context) (ready bool, err error) {
	err = c.call(ctx, "Probe", func(ctx context.Context) error {
		resp, err := c.identity.Probe(ctx, &csipb.ProbeRequest{})
		if err != nil {
			return err
		}
		ready = resp.GetReady() == nil || resp.GetReady().GetValue()
		return nil
	})
	return ready, err
}
