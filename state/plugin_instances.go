package state

import (
	"sort"
	"time"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// updateNodePlugins moves the csi_plugins rows' counts from what the node
// gave before (prev) to what it gives now (next), for exactly the plugins
// the node reports now or reported before. next is nil when the node is
// deleted, prev when it is new. Its work is O(the node's plugins), never
// O(nodes): the instances stay on the node rows. It reports whether it
// wrote any plugin row.
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
		c, err := updatePluginRow(txn, index, id, nodeID, prev, next)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	return changed, nil
}

// pluginShare is what one node adds to a plugin row's counts.
type pluginShare struct {
	ctrl, ctrlHealthy, ctrlPublishing, node, nodeHealthy int
}

// shareOf is n's share of plugin id: its instances, healthy when they say
// so and n is ready. The zero share for a nil node.
func shareOf(n *structs.Node, id string) (s pluginShare) {
	if n == nil {
		return s
	}
	if c := n.CSIControllerPlugins[id]; c != nil {
		s.ctrl = 1
		if c.Healthy && n.Ready() {
			s.ctrlHealthy = 1
		}
		if c.ControllerInfo != nil && c.ControllerInfo.SupportsAttachDetach {
			s.ctrlPublishing = 1
		}
	}
	if i := n.CSINodePlugins[id]; i != nil {
		s.node = 1
		if i.Healthy && n.Ready() {
			s.nodeHealthy = 1
		}
	}
	return s
}

// add adds sign times s to plug's counts.
func (s pluginShare) add(plug *structs.CSIPlugin, sign int) {
	plug.ControllersExpected += sign * s.ctrl
	plug.ControllersHealthy += sign * s.ctrlHealthy
	plug.ControllersPublishing += sign * s.ctrlPublishing
	plug.NodesExpected += sign * s.node
	plug.NodesHealthy += sign * s.nodeHealthy
}

// instances returns n's controller and node instance of plugin id (nil
// for a nil node).
func instances(n *structs.Node, id string) (ctrl, node *structs.CSIInfo) {
	if n == nil {
		return nil, nil
	}
	return n.CSIControllerPlugins[id], n.CSINodePlugins[id]
}

// updatePluginRow moves plugin id's row from node nodeID's share before
// (prev) to its share now (next). The row is written when a count moves
// or one of the node's instances changed (so that a blocking read of the
// plugin wakes for it), created if missing, and deleted when no instance
// and no running job is left. Its Provider, Version and ControllerRequired
// are the newest report's (ProviderNode, ProviderUpdated). It reports
// whether it wrote.
func updatePluginRow(txn *memdb.Txn, index uint64, id, nodeID string, prev, next *structs.Node) (bool, error) {
	before, after := shareOf(prev, id), shareOf(next, id)
	pc, pn := instances(prev, id)
	nc, nn := instances(next, id)
	if before == after && infoEqual(pc, nc) && infoEqual(pn, nn) {
		return false, nil
	}
	old, err := pluginByIDTxn(txn, nil, id)
	if err != nil {
		return false, err
	}
	var plug *structs.CSIPlugin
	if old == nil {
		if after == (pluginShare{}) {
			return false, nil
		}
		plug = structs.NewCSIPlugin(id, index)
	} else {
		plug = old.Copy()
		before.add(plug, -1)
	}
	after.add(plug, 1)
	if report := newestOf(nc, nn); report != nil {
		if plug.ProviderNode == "" || plug.ProviderNode == nodeID || !report.UpdateTime.Before(plug.ProviderUpdated) {
			setProvider(plug, nodeID, report)
		}
	} else if plug.ProviderNode == nodeID && !plug.IsEmpty() {
		// The instance the row showed is gone: the newest of the others
		// takes over. Only this case walks the plugin's nodes.
		if err := newestProviderTxn(txn, plug); err != nil {
			return false, err
		}
	}
	if plug.IsEmpty() {
		jobs, err := jobsRunningPlugin(txn, id)
		if err != nil {
			return false, err
		}
		if len(jobs) == 0 {
			if old == nil {
				return false, nil
			}
			if err := txn.Delete(TableCSIPlugins, old); err != nil {
				return false, errInternal("delete plugin "+id, err)
			}
			return true, nil
		}
	}
	plug.ModifyIndex = index
	if err := txn.Insert(TableCSIPlugins, plug); err != nil {
		return false, errInternal("insert plugin "+id, err)
	}
	return true, nil
}

// newestOf is the later reported of a node's two instances of a plugin,
// the controller on a tie; nil when it has neither.
func newestOf(ctrl, node *structs.CSIInfo) *structs.CSIInfo {
	if ctrl == nil || node != nil && node.UpdateTime.After(ctrl.UpdateTime) {
		return node
	}
	return ctrl
}

// setProvider makes plug show report, nodeID's.
func setProvider(plug *structs.CSIPlugin, nodeID string, report *structs.CSIInfo) {
	plug.Provider, plug.Version = report.Provider, report.ProviderVersion
	plug.ControllerRequired = report.RequiresControllerPlugin
	plug.ProviderNode, plug.ProviderUpdated = nodeID, report.UpdateTime
}

// newestProviderTxn sets plug's provider from the newest report of the
// nodes that report it (on a tie, the lowest node ID), leaving it as it is
// when none does.
func newestProviderTxn(txn *memdb.Txn, plug *structs.CSIPlugin) error {
	iter, err := txn.Get(TableNodes, indexCSIPlugin, plug.ID)
	if err != nil {
		return errInternal("read the nodes of plugin "+plug.ID, err)
	}
	var best *structs.CSIInfo
	bestNode := ""
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		r := newestOf(instances(n, plug.ID))
		if r != nil && (best == nil || r.UpdateTime.After(best.UpdateTime)) {
			best, bestNode = r, n.ID
		}
	}
	if best != nil {
		setProvider(plug, bestNode, best)
	}
	return nil
}

// setInstance sets m[key] to a copy of info, or deletes it when nil.
func setInstance(m map[string]*structs.CSIInfo, key string, info *structs.CSIInfo) {
	if info == nil {
		delete(m, key)
		return
	}
	m[key] = info.Copy()
}

// infoEqual reports whether two instances are the same, their report
// time included.
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
