package state

import (
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// UpdateNodeFingerprint applies a client's fingerprint delta: it sets or
// removes the named plugins' controller and node entries on the node,
// appends the events, writes the rows of only those plugins, so a node
// update never scans the plugin table, and sets the volume usage it
// reports on the claims it names.
func (s *StateStore) UpdateNodeFingerprint(index uint64, req *structs.NodeFingerprintRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	w, err := updateNodeFingerprintTxn(txn, index, req)
	if err != nil {
		return err
	}
	return commitFingerprintWrite(txn, index, w)
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

	var all fingerprintWrite
	for i := range reqs {
		w, err := updateNodeFingerprintTxn(txn, index, &reqs[i])
		if errors.Is(err, structs.ErrInternal) {
			return allFailed(errs, err)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		all.merge(w)
	}
	if !all.any() {
		return errs
	}
	if err := commitFingerprintWrite(txn, index, all); err != nil {
		return allFailed(errs, err)
	}
	return errs
}

// fingerprintWrite is which tables a fingerprint delta wrote.
type fingerprintWrite struct{ node, plugins, volumes bool }

func (w *fingerprintWrite) merge(o fingerprintWrite) {
	w.node, w.plugins, w.volumes = w.node || o.node, w.plugins || o.plugins, w.volumes || o.volumes
}

func (w fingerprintWrite) any() bool { return w.node || w.plugins || w.volumes }

// commitFingerprintWrite bumps the indexes of the tables written and
// commits; a delta that wrote nothing (usage that did not change) commits
// nothing.
func commitFingerprintWrite(txn *memdb.Txn, index uint64, w fingerprintWrite) error {
	var tables []string
	if w.node {
		tables = append(tables, TableNodes)
	}
	if w.plugins {
		tables = append(tables, TableCSIPlugins)
	}
	if w.volumes {
		tables = append(tables, TableCSIVolumes)
	}
	if len(tables) == 0 {
		return nil
	}
	if err := bumpIndexes(txn, index, tables...); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// updateNodeFingerprintTxn applies one fingerprint delta to txn and
// reports what it wrote. It checks the whole delta before it writes: a
// refusal leaves txn as it was. Once it writes, only an internal error
// can stop it, and the caller must abort txn. A delta with only usage
// leaves the node row as it is.
func updateNodeFingerprintTxn(txn *memdb.Txn, index uint64, req *structs.NodeFingerprintRequest) (fingerprintWrite, error) {
	var w fingerprintWrite
	existing, err := nodeByIDTxn(txn, nil, req.NodeID)
	if err != nil {
		return w, err
	}
	if existing == nil {
		return w, errNotFound("node %q is not registered; the client must register before it reports plugins", req.NodeID)
	}
	for _, u := range req.Plugins {
		if u == nil || u.PluginID == "" {
			return w, errBadRequest("node %q: a plugin update carries no plugin ID", req.NodeID)
		}
		if err := checkInfo(req.NodeID, u.PluginID, u.Controller, u.Node); err != nil {
			return w, err
		}
	}
	if err := checkUsageReports(req.NodeID, req.VolumeUsage); err != nil {
		return w, err
	}

	if len(req.Plugins) > 0 || len(req.Events) > 0 {
		if w.plugins, err = updateNodePluginsTxn(txn, index, existing, req); err != nil {
			return w, err
		}
		w.node = true
	}
	if w.volumes, err = applyUsageTxn(txn, index, req.NodeID, req.VolumeUsage); err != nil {
		return w, err
	}
	return w, nil
}

// updateNodePluginsTxn writes the node row with the delta's plugins and
// events, and the plugins' rows; it reports whether a plugin row changed.
func updateNodePluginsTxn(txn *memdb.Txn, index uint64, existing *structs.Node, req *structs.NodeFingerprintRequest) (bool, error) {
	node := existing.Copy()
	if node.CSIControllerPlugins == nil {
		node.CSIControllerPlugins = map[string]*structs.CSIInfo{}
	}
	if node.CSINodePlugins == nil {
		node.CSINodePlugins = map[string]*structs.CSIInfo{}
	}
	for _, u := range req.Plugins {
		setInstance(node.CSIControllerPlugins, u.PluginID, u.Controller)
		setInstance(node.CSINodePlugins, u.PluginID, u.Node.NodeSideChecked())
	}
	if len(req.Events) > 0 {
		node.Events = newestEvents(append(node.Events, req.Events...))
	}
	node.ModifyIndex = index
	if err := txn.Insert(TableNodes, node); err != nil {
		return false, errInternal("insert node "+req.NodeID, err)
	}
	return updateNodePlugins(txn, index, req.NodeID, existing, node)
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
