package server

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// checkRegister checks a volume with its plugin before it is registered:
// that no other volume is registered on its storage volume, its
// topologies against the plugin's nodes, its capabilities with a
// controller instance when the plugin has one, and, for a volume already
// registered, grows it when capacity_min grew. Growing comes last, so a
// refused volume never changes at the provider. warning is the plugin's
// reason when it did not confirm the capabilities.
func (v *CSIVolume) checkRegister(ctx context.Context, vol *structs.CSIVolume) (warning string, err error) {
	vol.NodeExpansion = nil // the servers' to keep (expand carries it over), never the caller's
	// The state store refuses it too, in the write (two registers at once);
	// asking first spares the plugin's calls.
	if err := v.srv.State().CheckCSIVolumeExternalID(vol); err != nil {
		return "", err
	}
	if err := v.srv.checkTopology(vol); err != nil {
		return "", err
	}
	existing, err := v.srv.State().CSIVolumeByID(nil, vol.Namespace, vol.ID)
	if err != nil {
		return "", err
	}
	if warning, err = v.validateCapabilities(ctx, vol); err != nil {
		return "", err
	}
	if existing == nil || existing.PluginID != vol.PluginID || existing.ExternalID != vol.ExternalID {
		return warning, nil // new, or an update the state store refuses
	}
	return warning, v.expand(ctx, existing, vol)
}

// checkTopology refuses a volume that no node of its plugin can reach,
// when the plugin's nodes report topologies. Nodes that report none say
// nothing either way.
func (s *Server) checkTopology(vol *structs.CSIVolume) error {
	if len(vol.Topologies) == 0 {
		return nil
	}
	plug, err := s.State().CSIPluginWithInstances(nil, vol.PluginID)
	if err != nil || plug == nil {
		return err // an unknown plugin is the state store's error
	}
	var seen []string
	for _, info := range plug.Nodes {
		if info.NodeInfo == nil || info.NodeInfo.AccessibleTopology == nil {
			continue
		}
		if vol.AccessibleFrom(info.NodeInfo.AccessibleTopology) {
			return nil
		}
		seen = append(seen, info.NodeInfo.AccessibleTopology.String())
	}
	if len(seen) == 0 {
		return nil
	}
	want := make([]string, len(vol.Topologies))
	for i, t := range vol.Topologies {
		want[i] = t.String()
	}
	missing, err := s.pluginNodesNotHealthy(plug)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		// An instance that is down may be the one in the topology: the
		// answer must wait for it, not blame the volume's spec.
		return structs.NewError(structs.CodeNotReady,
			"volume %q: topology %v: no healthy node of plugin %q is in it now, and its instances on %s are not healthy; retry once they are (or fix topology_request.required if no node is in that topology)",
			vol.ID, want, vol.PluginID, strings.Join(missing, ", "))
	}
	return structs.NewError(structs.CodeBadRequest,
		"volume %q: topology %v: no node of plugin %q is in it (its nodes are in %v); fix topology_request.required or start the plugin in that topology",
		vol.ID, want, vol.PluginID, seen)
}

// pluginNodesNotHealthy names the nodes (by name, else ID) where plug's
// node instance is not healthy now: reported unhealthy, on a node that is
// not ready, or missing on a node that runs an allocation of a job that
// runs the plugin (a plugin task restarting, a client restarting).
func (s *Server) pluginNodesNotHealthy(plug *structs.CSIPlugin) ([]string, error) {
	st := s.State()
	bad := map[string]bool{}
	jobs := map[[2]string]bool{}
	for nodeID, info := range plug.Nodes {
		node, err := st.NodeByID(nil, nodeID)
		if err != nil {
			return nil, err
		}
		if info == nil || !info.Healthy || node == nil || !node.Ready() {
			bad[nodeID] = true
		}
		if info == nil || info.AllocID == "" {
			continue
		}
		alloc, err := st.AllocByID(nil, info.AllocID)
		if err != nil {
			return nil, err
		}
		if alloc != nil {
			jobs[[2]string{alloc.Namespace, alloc.JobID}] = true
		}
	}
	for job := range jobs {
		it, err := st.AllocsByJob(nil, job[0], job[1])
		if err != nil {
			return nil, err
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			a := raw.(*structs.Allocation)
			if _, ok := plug.Nodes[a.NodeID]; !ok && !a.TerminalStatus() {
				bad[a.NodeID] = true
			}
		}
	}
	var names []string
	for nodeID := range bad {
		name := nodeID
		if node, err := st.NodeByID(nil, nodeID); err == nil && node != nil && node.Name != "" {
			name = node.Name
		}
		names = append(names, "node "+name)
	}
	sort.Strings(names)
	return names, nil
}

// validateCapabilities asks a controller instance of the volume's plugin
// whether the volume supports its capabilities. A plugin without a
// controller has nothing to ask; a plugin that does not confirm either
// way is not a failure but a warning; a confirmed set that differs is an
// error naming the field.
func (v *CSIVolume) validateCapabilities(ctx context.Context, vol *structs.CSIVolume) (warning string, err error) {
	plug, err := v.srv.State().CSIPluginByID(nil, vol.PluginID)
	if err != nil || plug == nil || plug.ControllersExpected == 0 {
		return "", err
	}
	req := &structs.ClientCSIControllerValidateVolumeRequest{
		PluginID:         vol.PluginID,
		ExternalVolumeID: vol.ExternalID,
		Capabilities:     vol.RequestedCapabilities,
		MountOptions:     vol.MountOptions,
		Secrets:          vol.Secrets,
		Parameters:       vol.Parameters,
		Context:          vol.Context,
	}
	var resp structs.ClientCSIControllerValidateVolumeResponse
	err = v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: capAny,
		method: "ClientCSI.ControllerValidateVolume", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp, volume: vol})
	if err != nil {
		return "", fmt.Errorf("volume %q: checking its capabilities with plugin %q: %w", vol.ID, vol.PluginID, err)
	}
	if resp.Confirmed {
		return "", nil
	}
	reason := resp.Message
	if reason == "" {
		reason = "it gave no reason"
	}
	return fmt.Sprintf("volume %q: plugin %q did not confirm its capabilities (%s); registered anyway", vol.ID, vol.PluginID, reason), nil
}

// expand grows a registered volume when the update's capacity_min is
// above what it has, through a controller instance, and records the new
// capacity in vol. Capacity and a pending node expansion are the servers'
// to keep: an update never sets them. Lowering capacity_min or a
// capacity_max below the capacity is shrinking, which CSI cannot do.
// When the controller answers that the nodes must expand the volume too,
// expandOnNodes has them do it (rpc_csi_volume_expand.go); a volume
// whose node expansion is pending is expanded again, which retries it.
func (v *CSIVolume) expand(ctx context.Context, old, vol *structs.CSIVolume) error {
	vol.Capacity = old.Capacity
	vol.NodeExpansion = old.NodeExpansion.Copy()
	if vol.RequestedCapacityMin == 0 && vol.RequestedCapacityMax == 0 {
		vol.RequestedCapacityMin, vol.RequestedCapacityMax = old.RequestedCapacityMin, old.RequestedCapacityMax
		return nil
	}
	if vol.RequestedCapacityMin < old.RequestedCapacityMin {
		return structs.NewError(structs.CodeBadRequest,
			"volume %q: capacity_min %d bytes is below the %d bytes it was given: volumes cannot shrink; give capacity_min of at least %d bytes",
			vol.ID, vol.RequestedCapacityMin, old.RequestedCapacityMin, old.RequestedCapacityMin)
	}
	if vol.RequestedCapacityMax > 0 && vol.RequestedCapacityMax < old.Capacity {
		return structs.NewError(structs.CodeBadRequest,
			"volume %q: capacity_max %d bytes is below its capacity of %d bytes: volumes cannot shrink; raise capacity_max or leave it out",
			vol.ID, vol.RequestedCapacityMax, old.Capacity)
	}
	pending := old.NodeExpansion != nil
	if !pending && (vol.RequestedCapacityMin <= old.Capacity || vol.RequestedCapacityMin == old.RequestedCapacityMin) {
		return nil
	}
	if vol.RequestedCapacityMin == 0 { // a capacity_max alone, with a node expansion pending
		vol.RequestedCapacityMin = old.RequestedCapacityMin
	}
	req := &structs.ClientCSIControllerExpandVolumeRequest{
		PluginID:         vol.PluginID,
		ExternalVolumeID: vol.ExternalID,
		CapacityMin:      vol.RequestedCapacityMin,
		CapacityMax:      vol.RequestedCapacityMax,
		MountOptions:     vol.MountOptions,
		Secrets:          vol.Secrets,
	}
	if len(vol.RequestedCapabilities) > 0 {
		req.Capability = vol.RequestedCapabilities[0]
	}
	var resp structs.ClientCSIControllerExpandVolumeResponse
	err := v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: capExpand,
		method: "ClientCSI.ControllerExpandVolume", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp, volume: vol})
	if err != nil {
		return fmt.Errorf("volume %q: expand to %d bytes with plugin %q: %w", vol.ID, vol.RequestedCapacityMin, vol.PluginID, err)
	}
	if !resp.NodeExpansionRequired {
		vol.Capacity = resp.CapacityBytes
		vol.NodeExpansion = nil
		return nil
	}
	return v.expandOnNodes(ctx, old, vol, &structs.CSIVolumeNodeExpansion{
		CapacityMin: req.CapacityMin, CapacityMax: req.CapacityMax, Capacity: resp.CapacityBytes})
}
