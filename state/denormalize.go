package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// CSIPluginWithInstances returns plugin id (nil if it does not exist)
// with every instance joined in from the node rows: for the servers' own
// use (picking a controller, checking topologies), O(the plugin's nodes).
// Allocations are not joined.
func (s *StateStore) CSIPluginWithInstances(ws memdb.WatchSet, id string) (*structs.CSIPlugin, error) {
	txn := s.db.Txn(false)
	plug, err := pluginByIDTxn(txn, ws, id)
	if err != nil || plug == nil {
		return nil, err
	}
	out, _, err := pluginInstancesTxn(txn, ws, plug, "", 0)
	return out, err
}

// CSIPluginNodes iterates the nodes that report plugin id, as controller
// or node, in node ID order.
func (s *StateStore) CSIPluginNodes(ws memdb.WatchSet, id string) (memdb.ResultIterator, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableNodes, indexCSIPlugin, id)
	if err != nil {
		return nil, errInternal("read the nodes of plugin "+id, err)
	}
	return iter, nil
}

// CSIPluginPage returns plugin id (nil if it does not exist) with a page
// of its instances: the nodes that report it, in node ID order, from node
// ID from (inclusive; empty is the first), at most limit nodes (0: all),
// with the allocations of their plugin tasks. next is the first node ID
// of the next page, empty on the last. ws watches the plugin row (which
// every change of an instance rewrites) and the page's allocations.
func (s *StateStore) CSIPluginPage(ws memdb.WatchSet, id, from string, limit int) (plug *structs.CSIPlugin, next string, err error) {
	txn := s.db.Txn(false)
	row, err := pluginByIDTxn(txn, ws, id)
	if err != nil || row == nil {
		return nil, "", err
	}
	if plug, next, err = pluginInstancesTxn(txn, nil, row, from, limit); err != nil {
		return nil, "", err
	}
	allocIDs := map[string]bool{}
	for _, m := range []map[string]*structs.CSIInfo{plug.Controllers, plug.Nodes} {
		for _, info := range m {
			if info.AllocID != "" {
				allocIDs[info.AllocID] = true
			}
		}
	}
	plug.Allocations = make([]*structs.AllocListStub, 0, len(allocIDs))
	for _, id := range sortedKeys(allocIDs) {
		alloc, err := allocByIDTxn(txn, ws, id)
		if err != nil {
			return nil, "", err
		}
		if alloc != nil {
			plug.Allocations = append(plug.Allocations, alloc.Stub())
		}
	}
	return plug, next, nil
}

// pluginInstancesTxn returns a copy of row with the instances of the
// nodes that report it joined in (see CSIPluginPage for from and limit),
// and the node ID the next page starts at.
func pluginInstancesTxn(txn *memdb.Txn, ws memdb.WatchSet, row *structs.CSIPlugin, from string, limit int) (*structs.CSIPlugin, string, error) {
	out := row.Copy()
	out.Controllers, out.Nodes = map[string]*structs.CSIInfo{}, map[string]*structs.CSIInfo{}
	iter, err := getWatch(txn, ws, TableNodes, indexCSIPlugin, row.ID)
	if err != nil {
		return nil, "", errInternal("read the nodes of plugin "+row.ID, err)
	}
	taken := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		if n.ID < from {
			continue
		}
		if limit > 0 && taken == limit {
			return out, n.ID, nil
		}
		taken++
		if c := n.CSIControllerPlugins[row.ID]; c != nil {
			out.Controllers[n.ID] = c
		}
		if i := n.CSINodePlugins[row.ID]; i != nil {
			out.Nodes[n.ID] = i
		}
	}
	return out, "", nil
}

// denormalizeVolumeTxn returns a copy of vol with what is derived on read
// (CSIVolumeByID): ReadAllocs and WriteAllocs (alloc ID -> stub, or nil
// when the alloc no longer exists) for its read and write claims, and the
// plugin's provider and health. Schedulable means the plugin exists with a
// healthy node instance and, if it requires a controller, a healthy
// controller.
func denormalizeVolumeTxn(txn *memdb.Txn, ws memdb.WatchSet, vol *structs.CSIVolume) (*structs.CSIVolume, error) {
	if vol == nil {
		return nil, nil
	}
	plug, err := pluginByIDTxn(txn, ws, vol.PluginID)
	if err != nil {
		return nil, err
	}
	return joinVolumeTxn(txn, ws, vol, plug)
}

// joinVolumeTxn is denormalizeVolumeTxn with vol's plugin row read
// already (nil: there is none), for a caller that joins many volumes to
// one plugin (the change events of a commit): a copy of vol with its
// claims' allocations, joined with plug.
func joinVolumeTxn(txn *memdb.Txn, ws memdb.WatchSet, vol *structs.CSIVolume, plug *structs.CSIPlugin) (*structs.CSIVolume, error) {
	out := vol.Copy()
	var err error
	if out.ReadAllocs, err = claimAllocs(txn, ws, vol.ReadClaims); err != nil {
		return nil, err
	}
	if out.WriteAllocs, err = claimAllocs(txn, ws, vol.WriteClaims); err != nil {
		return nil, err
	}
	out.JoinPlugin(plug)
	return out, nil
}

func claimAllocs(txn *memdb.Txn, ws memdb.WatchSet, claims map[string]*structs.CSIVolumeClaim) (map[string]*structs.AllocListStub, error) {
	out := make(map[string]*structs.AllocListStub, len(claims))
	for id := range claims {
		alloc, err := allocByIDTxn(txn, ws, id)
		if err != nil {
			return nil, err
		}
		if alloc == nil {
			out[id] = nil
			continue
		}
		out[id] = alloc.Stub()
	}
	return out, nil
}
