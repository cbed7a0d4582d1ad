package state

import (
	"github.com/berth-csi/berth/structs"
)

// UpdateNodeFingerprint applies a client's fingerprint delta: it sets or
// removes the named plugins' controller and node entries on the node,
// appends the events, and writes the rows of only those plugins, so a
// node update never scans the plugin table.
func (s *StateStore) UpdateNodeFingerprint(index uint64, req *structs.NodeFingerprintRequest) error {
	txn := s.db.Txn(true)
	defer txn.Abort()

	existing, err := nodeByIDTxn(txn, nil, req.NodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return errNotFound("node %q is not registered; the client must register before it reports plugins", req.NodeID)
	}
	node := existing.Copy()
	if node.CSIControllerPlugins == nil {
		node.CSIControllerPlugins = map[string]*structs.CSIInfo{}
	}
	if node.CSINodePlugins == nil {
		node.CSINodePlugins = map[string]*structs.CSIInfo{}
	}
	pluginsChanged := false
	for _, u := range req.Plugins {
		if u == nil || u.PluginID == "" {
			return errBadRequest("node %q: a plugin update carries no plugin ID", req.NodeID)
		}
		if err := checkInfo(req.NodeID, u.PluginID, u.Controller, u.Node); err != nil {
			return err
		}
		nodeSide := u.Node.NodeSideChecked()
		setInstance(node.CSIControllerPlugins, u.PluginID, u.Controller)
		setInstance(node.CSINodePlugins, u.PluginID, nodeSide)
		changed, err := updatePluginInstances(txn, index, u.PluginID, req.NodeID, u.Controller, nodeSide)
		if err != nil {
			return err
		}
		pluginsChanged = pluginsChanged || changed
	}
	if len(req.Events) > 0 {
		node.Events = newestEvents(append(node.Events, req.Events...))
	}
	node.ModifyIndex = index
	if err := txn.Insert(TableNodes, node); err != nil {
		return errInternal("insert node "+req.NodeID, err)
	}
	return commitNodeWrite(txn, index, pluginsChanged)
}

// checkInfo refuses an update whose info is keyed by another plugin. A
// node side without NodeGetInfo's answer is kept, unhealthy
// (CSIInfo.NodeSideChecked).
func checkInfo(nodeID, pluginID string, ctrl, node *structs.CSIInfo) error {
	if ctrl != nil && ctrl.PluginID != pluginID {
		return errBadRequest("node %q: controller info for plugin %q names plugin %q", nodeID, pluginID, ctrl.PluginID)
	}
	if node != nil && node.PluginID != pluginID {
		return errBadRequest("node %q: node info for plugin %q names plugin %q", nodeID, pluginID, node.PluginID)
	}
	return nil
}
