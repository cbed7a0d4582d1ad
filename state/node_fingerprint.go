package state

import (
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// UpdateNodeFingerprint applies a client's fingerprint delta: it sets or
// removes the named plugins' controller and node entries on the node,
// appends the events, and writes the rows of only those plugins, so a
// node update never scans the plugin table.
func (s *StateStore) UpdateNodeFingerprint(index uint64, req *structs.NodeFingerprintRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	pluginsChanged, err := updateNodeFingerprintTxn(txn, index, req)
	if err != nil {
		return err
	}
	return commitNodeWrite(txn, index, pluginsChanged)
}

// UpdateNodeFingerprintBatch applies several fingerprint deltas, in
// order, in one transaction (a reader sees all of the index or none of
// it), each as UpdateNodeFingerprint would alone, and answers one error
// per delta. A refused delta (unknown node, bad plugin entry) is refused
// before it writes, so it leaves no trace and the others apply. An
// internal error (memdb's own) can leave part of a delta in the
// transaction: the batch is then aborted and every delta answered with it.
func (s *StateStore) UpdateNodeFingerprintBatch(index uint64, reqs []structs.NodeFingerprintRequest) []error {
	errs := make([]error, len(reqs))
	txn := s.writeTxn(index)
	defer txn.Abort()

	wrote, pluginsChanged := false, false
	for i := range reqs {
		changed, err := updateNodeFingerprintTxn(txn, index, &reqs[i])
		if errors.Is(err, structs.ErrInternal) {
			return allFailed(errs, err)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		wrote = true
		pluginsChanged = pluginsChanged || changed
	}
	if !wrote {
		return errs
	}
	if err := commitNodeWrite(txn, index, pluginsChanged); err != nil {
		return allFailed(errs, err)
	}
	return errs
}

// updateNodeFingerprintTxn applies one fingerprint delta to txn and
// reports whether it changed a plugin row. It checks the whole delta
// before it writes: a refusal leaves txn as it was. Once it writes, only
// an internal error can stop it, and the caller must abort txn.
func updateNodeFingerprintTxn(txn *memdb.Txn, index uint64, req *structs.NodeFingerprintRequest) (bool, error) {
	existing, err := nodeByIDTxn(txn, nil, req.NodeID)
	if err != nil {
		return false, err
	}
	if existing == nil {
		return false, errNotFound("node %q is not registered; the client must register before it reports plugins", req.NodeID)
	}
	for _, u := range req.Plugins {
		if u == nil || u.PluginID == "" {
			return false, errBadRequest("node %q: a plugin update carries no plugin ID", req.NodeID)
		}
		if err := checkInfo(req.NodeID, u.PluginID, u.Controller, u.Node); err != nil {
			return false, err
		}
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
		nodeSide := u.Node.NodeSideChecked()
		setInstance(node.CSIControllerPlugins, u.PluginID, u.Controller)
		setInstance(node.CSINodePlugins, u.PluginID, nodeSide)
		changed, err := updatePluginInstances(txn, index, u.PluginID, req.NodeID, u.Controller, nodeSide)
		if err != nil {
			return false, err
		}
		pluginsChanged = pluginsChanged || changed
	}
	if len(req.Events) > 0 {
		node.Events = newestEvents(append(node.Events, req.Events...))
	}
	node.ModifyIndex = index
	if err := txn.Insert(TableNodes, node); err != nil {
		return false, errInternal("insert node "+req.NodeID, err)
	}
	return pluginsChanged, nil
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
