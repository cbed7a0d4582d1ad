package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// CSIPluginDenormalize returns a copy of plug with what is derived on read:
// the expected and healthy counts, and the allocations of its instances.
// An instance is healthy when it says so and its node exists and is ready,
// so a node going down makes its instances unhealthy without a plugin
// write. The watch channels of every node and alloc read are added to ws.
func (s *StateStore) CSIPluginDenormalize(ws memdb.WatchSet, plug *structs.CSIPlugin) (*structs.CSIPlugin, error) {
	return denormalizePluginTxn(s.db.Txn(false), ws, plug)
}

func denormalizePluginTxn(txn *memdb.Txn, ws memdb.WatchSet, plug *structs.CSIPlugin) (*structs.CSIPlugin, error) {
	if plug == nil {
		return nil, nil
	}
	out := plug.Copy()
	out.ControllersExpected = len(plug.Controllers)
	out.NodesExpected = len(plug.Nodes)
	out.ControllersHealthy, out.NodesHealthy = 0, 0

	allocIDs := map[string]bool{}
	count := func(m map[string]*structs.CSIInfo) (int, error) {
		healthy := 0
		for nodeID, info := range m {
			if info == nil {
				continue
			}
			if info.AllocID != "" {
				allocIDs[info.AllocID] = true
			}
			if !info.Healthy {
				continue
			}
			node, err := nodeByIDTxn(txn, ws, nodeID)
			if err != nil {
				return 0, err
			}
			if node.Ready() {
				healthy++
			}
		}
		return healthy, nil
	}
	var err error
	if out.ControllersHealthy, err = count(plug.Controllers); err != nil {
		return nil, err
	}
	if out.NodesHealthy, err = count(plug.Nodes); err != nil {
		return nil, err
	}

	out.Allocations = make([]*structs.AllocListStub, 0, len(allocIDs))
	for _, id := range sortedKeys(allocIDs) {
		alloc, err := allocByIDTxn(txn, ws, id)
		if err != nil {
			return nil, err
		}
		if alloc != nil {
			out.Allocations = append(out.Allocations, alloc.Stub())
		}
	}
	return out, nil
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
	raw, err := pluginByIDTxn(txn, ws, vol.PluginID)
	if err != nil {
		return nil, err
	}
	var plug *structs.CSIPlugin
	if raw != nil {
		if plug, err = denormalizePluginTxn(txn, ws, raw); err != nil {
			return nil, err
		}
	}
	return joinVolumeTxn(txn, ws, vol, plug)
}

// joinVolumeTxn is denormalizeVolumeTxn with vol's plugin denormalized
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
