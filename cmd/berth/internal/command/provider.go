package command

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// The provider view is what a plugin's controller reports about its
// volumes (CSI ListVolumes), beside what berth has registered. volume
// status and plugin status show it under -verbose. A plugin that cannot
// list its volumes does not fail those commands: they say so in one line.

// externalVolumes reads the volumes pluginID's controller lists, page by
// page, to the last page or to the first page that holds a volume for
// which found is true (found may be nil).
func externalVolumes(c *api.Client, pluginID string, found func(*structs.CSIExternalVolume) bool) ([]*structs.CSIExternalVolume, error) {
	fetch := func(token string) ([]*structs.CSIExternalVolume, string, error) {
		page, _, err := c.CSIVolumes().ListExternal(pluginID, 0, token, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Volumes, page.NextToken, nil
	}
	var done func([]*structs.CSIExternalVolume) bool
	if found != nil {
		done = func(vols []*structs.CSIExternalVolume) bool {
			for _, v := range vols {
				if v != nil && found(v) {
					return true
				}
			}
			return false
		}
	}
	vols, err := allPages("", fetch, done)
	if err != nil {
		return nil, errors.New(apiError(fmt.Sprintf("list the volumes of plugin %q", pluginID), err))
	}
	return vols, nil
}

// volumeProviderView shows how the volume's plugin reports it.
func (m *meta) volumeProviderView(c *api.Client, v *structs.CSIVolume) {
	section(m.stdout, "Provider View")
	if v.ExternalID == "" {
		m.println("None: the volume has no external ID to look up")
		return
	}
	var ext *structs.CSIExternalVolume
	_, err := externalVolumes(c, v.PluginID, func(e *structs.CSIExternalVolume) bool {
		if e.ExternalID == v.ExternalID {
			ext = e
			return true
		}
		return false
	})
	switch {
	case err != nil:
		m.println("Cannot read the provider view: " + oneLine(err.Error()))
		return
	case ext == nil:
		m.println(fmt.Sprintf("Volume %q is not listed by plugin %q: the storage provider does not report it; "+
			"it may have been deleted outside berth", v.ExternalID, v.PluginID))
		return
	}
	kv(m.stdout, [][2]string{
		{"External ID", ext.ExternalID},
		{"Capacity", sizeOrUnknown(ext.CapacityBytes)},
		{"Published Nodes", publishedNodes(ext)},
		{"Condition", condition(ext)},
	})
}

// volumeListProviderViews shows, for each plugin of vols, the volumes its
// controller lists.
func (m *meta) volumeListProviderViews(c *api.Client, vols []*structs.CSIVolumeListStub) {
	seen := map[string]bool{}
	var plugins []string
	for _, v := range vols {
		if v.PluginID != "" && !seen[v.PluginID] {
			seen[v.PluginID] = true
			plugins = append(plugins, v.PluginID)
		}
	}
	sort.Strings(plugins)
	for _, p := range plugins {
		section(m.stdout, fmt.Sprintf("Provider Volumes of Plugin %q", p))
		m.providerVolumes(c, p)
	}
}

// pluginProviderView shows the volumes the plugin's controller lists.
func (m *meta) pluginProviderView(c *api.Client, p *structs.CSIPlugin) {
	section(m.stdout, "Provider Volumes")
	if len(p.Controllers) == 0 {
		m.println(fmt.Sprintf("None: plugin %q has no controller to list its volumes", p.ID))
		return
	}
	m.providerVolumes(c, p.ID)
}

// providerVolumes lists the volumes pluginID's controller reports, marking
// those berth does not know.
func (m *meta) providerVolumes(c *api.Client, pluginID string) {
	vols, err := externalVolumes(c, pluginID, nil)
	if err != nil {
		m.println("Cannot list the plugin's volumes: " + oneLine(err.Error()))
		return
	}
	// berth's volumes first, by ID, then those it does not know, by the
	// plugin's ID (the plugin's own order is only for paging).
	sort.SliceStable(vols, func(i, j int) bool {
		a, b := vols[i], vols[j]
		switch {
		case a == nil || b == nil:
			return b == nil && a != nil
		case (a.VolumeID == "") != (b.VolumeID == ""):
			return a.VolumeID != ""
		case a.VolumeID != b.VolumeID:
			return a.VolumeID < b.VolumeID
		}
		return a.ExternalID < b.ExternalID
	})
	rows := make([][]string, 0, len(vols))
	for _, v := range vols {
		if v == nil {
			continue
		}
		berthID := v.VolumeID
		if berthID == "" {
			berthID = "(unknown to berth)"
		}
		rows = append(rows, []string{v.ExternalID, berthID, sizeOrUnknown(v.CapacityBytes), publishedNodes(v), condition(v)})
	}
	if len(rows) == 0 {
		m.println(fmt.Sprintf("No volumes listed by plugin %q", pluginID))
		return
	}
	table(m.stdout, []string{"External ID", "Berth Volume", "Capacity", "Published Nodes", "Condition"}, rows)
}

// publishedNodes shows the plugin's IDs of the nodes the volume is
// published to.
func publishedNodes(v *structs.CSIExternalVolume) string {
	if len(v.PublishedExternalNodeIDs) == 0 {
		return "<none>"
	}
	return strings.Join(v.PublishedExternalNodeIDs, ", ")
}

// condition shows the volume's condition as the plugin reports it.
func condition(v *structs.CSIExternalVolume) string {
	msg := oneLine(v.Status)
	switch {
	case v.IsAbnormal && msg != "":
		return "abnormal: " + msg
	case v.IsAbnormal:
		return "abnormal"
	case msg != "":
		return msg
	}
	return "not reported"
}
