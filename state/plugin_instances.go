package state

import (
	"sort"
	"time"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// updateNodePlugins brings the csi_plugins rows in line with a node's
// fingerprint, for exactly the plugins the node reports now (in next) or
// reported before (in prev). next is nil when the node is deleted. It
// reports whether it wrote any plugin row.
func updateNodePlugins(txn *memdb.Txn, index uint64, nodeID string, prev, next *structs.Node) (bool, error) {
	ids := map[string]bool{}
	for _, n := range []*structs.Node{prev, next} {
		if n == nil {
			continue
		}
		for id := range n.CSIControllerPlugins {
			ids[id] = true
		}
		for id := range n.CSINodePlugins {
			ids[id] = true
		}
	}

	changed := false
	for _, id := range sortedKeys(ids) {
		var ctrl, node *structs.CSIInfo
		if next != nil {
			ctrl, node = next.CSIControllerPlugins[id], next.CSINodePlugins[id]
		}
		c, err := updatePluginInstances(txn, index, id, nodeID, ctrl, node)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	return changed, nil
}

// updatePluginInstances sets (or, when nil, removes) one node's controller
// and node instance of one plugin. It writes the row only if it changed,
// creates it if missing, and deletes it when no instance and no running job
// is left. It reports whether it wrote.
func updatePluginInstances(txn *memdb.Txn, index uint64, pluginID, nodeID string, ctrl, node *structs.CSIInfo) (bool, error) {
	old, err := pluginByIDTxn(txn, nil, pluginID)
	if err != nil {
		return false, err
	}
	var plug *structs.CSIPlugin
	if old == nil {
		if ctrl == nil && node == nil {
			return false, nil
		}
		plug = structs.NewCSIPlugin(pluginID, index)
	} else {
		plug = old.Copy()
		if plug.Controllers == nil {
			plug.Controllers = map[string]*structs.CSIInfo{}
		}
		if plug.Nodes == nil {
			plug.Nodes = map[string]*structs.CSIInfo{}
		}
	}
	setInstance(plug.Controllers, nodeID, ctrl)
	setInstance(plug.Nodes, nodeID, node)
	if newest := newestInstance(plug, nodeID); newest != nil {
		plug.Provider = newest.Provider
		plug.Version = newest.ProviderVersion
		plug.ControllerRequired = newest.RequiresControllerPlugin
	}

	if old != nil && pluginRowEqual(old, plug) {
		return false, nil
	}
	if plug.IsEmpty() {
		jobs, err := jobsRunningPlugin(txn, pluginID)
		if err != nil {
			return false, err
		}
		if len(jobs) == 0 {
			if old == nil {
				return false, nil
			}
			if err := txn.Delete(TableCSIPlugins, old); err != nil {
				return false, errInternal("delete plugin "+pluginID, err)
			}
			return true, nil
		}
	}
	plug.ModifyIndex = index
	if err := txn.Insert(TableCSIPlugins, plug); err != nil {
		return false, errInternal("insert plugin "+pluginID, err)
	}
	return true, nil
}

func setInstance(m map[string]*structs.CSIInfo, nodeID string, info *structs.CSIInfo) {
	if info == nil {
		delete(m, nodeID)
		return
	}
	m[nodeID] = info.Copy()
}

// newestInstance picks the instance whose Provider, Version and
// ControllerRequired the plugin row shows: the latest UpdateTime; on a tie
// the instance of nodeID (just reported), then the lowest node ID,
// controllers before nodes. nil when the plugin has no instance.
func newestInstance(plug *structs.CSIPlugin, nodeID string) *structs.CSIInfo {
	var best *structs.CSIInfo
	bestNode := ""
	better := func(info *structs.CSIInfo, n string) bool {
		switch {
		case best == nil:
			return true
		case !info.UpdateTime.Equal(best.UpdateTime):
			return info.UpdateTime.After(best.UpdateTime)
		case (n == nodeID) != (bestNode == nodeID):
			return n == nodeID
		}
		return n < bestNode
	}
	for _, m := range []map[string]*structs.CSIInfo{plug.Controllers, plug.Nodes} {
		keys := sortedKeys(m)
		for _, n := range keys {
			if info := m[n]; info != nil && better(info, n) {
				best, bestNode = info, n
			}
		}
	}
	return best
}

// pluginRowEqual compares what a plugin row stores (not the derived
// fields).
func pluginRowEqual(a, b *structs.CSIPlugin) bool {
	return a.Provider == b.Provider &&
		a.Version == b.Version &&
		a.ControllerRequired == b.ControllerRequired &&
		instancesEqual(a.Controllers, b.Controllers) &&
		instancesEqual(a.Nodes, b.Nodes)
}

func instancesEqual(a, b map[string]*structs.CSIInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !infoEqual(v, w) {
			return false
		}
	}
	return true
}

func infoEqual(a, b *structs.CSIInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	ac, bc := *a, *b
	ac.UpdateTime, bc.UpdateTime = time.Time{}, time.Time{}
	ac.ControllerInfo, bc.ControllerInfo = nil, nil
	ac.NodeInfo, bc.NodeInfo = nil, nil
	if ac != bc || !a.UpdateTime.Equal(b.UpdateTime) {
		return false
	}
	if (a.ControllerInfo == nil) != (b.ControllerInfo == nil) ||
		a.ControllerInfo != nil && *a.ControllerInfo != *b.ControllerInfo {
		return false
	}
	return nodeInfoEqual(a.NodeInfo, b.NodeInfo)
}

func nodeInfoEqual(a, b *structs.CSINodeInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	ac, bc := *a, *b
	ac.AccessibleTopology, bc.AccessibleTopology = nil, nil
	return ac == bc && a.AccessibleTopology.Equal(b.AccessibleTopology)
}

// jobsRunningPlugin returns the jobs, not stopped, whose tasks run the
// plugin, sorted by namespace and ID.
func jobsRunningPlugin(txn *memdb.Txn, pluginID string) ([]*structs.Job, error) {
	iter, err := txn.Get(TableJobs, indexCSIPlugin, pluginID)
	if err != nil {
		return nil, errInternal("read jobs by plugin "+pluginID, err)
	}
	var jobs []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); !j.Stop {
			jobs = append(jobs, j)
		}
	}
	sort.Slice(jobs, func(i, k int) bool {
		if jobs[i].Namespace != jobs[k].Namespace {
			return jobs[i].Namespace < jobs[k].Namespace
		}
		return jobs[i].ID < jobs[k].ID
	})
	return jobs, nil
}

// deletePluginIfUnused deletes a plugin row left with no instance and no
// running job. It reports whether it deleted.
func deletePluginIfUnused(txn *memdb.Txn, pluginID string) (bool, error) {
	plug, err := pluginByIDTxn(txn, nil, pluginID)
	if err != nil || plug == nil || !plug.IsEmpty() {
		return false, err
	}
	jobs, err := jobsRunningPlugin(txn, pluginID)
	if err != nil || len(jobs) > 0 {
		return false, err
	}
	if err := txn.Delete(TableCSIPlugins, plug); err != nil {
		return false, errInternal("delete plugin "+pluginID, err)
	}
	return true, nil
}
