package state

import (
	"fmt"
	"sort"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// stringsIndexer is a memdb.MultiIndexer over a set of strings computed from
// an object: one index entry per distinct non-empty string. Lookups take one
// string argument and match it exactly.
type stringsIndexer struct {
	name   string // for errors
	values func(obj any) ([]string, error)
}

var _ memdb.MultiIndexer = (*stringsIndexer)(nil)

// FromObject implements memdb.MultiIndexer.
func (x *stringsIndexer) FromObject(obj any) (bool, [][]byte, error) {
	vals, err := x.values(obj)
	if err != nil {
		return false, nil, err
	}
	sort.Strings(vals)
	out := make([][]byte, 0, len(vals))
	for i, v := range vals {
		if v == "" || i > 0 && vals[i-1] == v {
			continue
		}
		out = append(out, []byte(v+"\x00"))
	}
	return len(out) > 0, out, nil
}

// FromArgs implements memdb.Indexer.
func (x *stringsIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("state: index %s takes one argument, got %d", x.name, len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("state: index %s takes a string, got %T", x.name, args[0])
	}
	return []byte(s + "\x00"), nil
}

// jobCSIPluginIndexer indexes a job by every plugin its tasks run.
var jobCSIPluginIndexer = &stringsIndexer{
	name: indexCSIPlugin,
	values: func(obj any) ([]string, error) {
		job, ok := obj.(*structs.Job)
		if !ok {
			return nil, fmt.Errorf("state: index %s wants *structs.Job, got %T", indexCSIPlugin, obj)
		}
		return job.CSIPluginIDs(), nil
	},
}

// nodeCSIPluginIndexer indexes a node by every plugin it reports, as
// controller or node.
var nodeCSIPluginIndexer = &stringsIndexer{
	name: indexCSIPlugin,
	values: func(obj any) ([]string, error) {
		n, ok := obj.(*structs.Node)
		if !ok {
			return nil, fmt.Errorf("state: index %s wants *structs.Node, got %T", indexCSIPlugin, obj)
		}
		ids := make([]string, 0, len(n.CSIControllerPlugins)+len(n.CSINodePlugins))
		for id := range n.CSIControllerPlugins {
			ids = append(ids, id)
		}
		for id := range n.CSINodePlugins {
			ids = append(ids, id)
		}
		return ids, nil
	},
}

// volumeClaimAllocIndexer indexes a volume by the alloc of each of its read,
// write and past claims.
var volumeClaimAllocIndexer = &stringsIndexer{
	name: indexClaimAlloc,
	values: func(obj any) ([]string, error) {
		vol, ok := obj.(*structs.CSIVolume)
		if !ok {
			return nil, fmt.Errorf("state: index %s wants *structs.CSIVolume, got %T", indexClaimAlloc, obj)
		}
		return vol.ClaimingAllocs(), nil
	},
}

// volumeReleasingIndexer has one entry, releasingKey, for each volume with
// a claim being released, and none for the others.
var volumeReleasingIndexer = &stringsIndexer{
	name: indexReleasing,
	values: func(obj any) ([]string, error) {
		vol, ok := obj.(*structs.CSIVolume)
		if !ok {
			return nil, fmt.Errorf("state: index %s wants *structs.CSIVolume, got %T", indexReleasing, obj)
		}
		if len(vol.PastClaims) == 0 {
			return nil, nil
		}
		return []string{releasingKey}, nil
	},
}

// releasingKey is the value volumeReleasingIndexer indexes by.
const releasingKey = "releasing"

// volumeClaimNodeIndexer indexes a volume by the node of each of its read,
// write and past claims.
var volumeClaimNodeIndexer = &stringsIndexer{
	name: indexClaimNode,
	values: func(obj any) ([]string, error) {
		vol, ok := obj.(*structs.CSIVolume)
		if !ok {
			return nil, fmt.Errorf("state: index %s wants *structs.CSIVolume, got %T", indexClaimNode, obj)
		}
		var nodes []string
		for _, m := range claimMaps(vol) {
			for _, c := range m {
				if c != nil {
					nodes = append(nodes, c.NodeID)
				}
			}
		}
		return nodes, nil
	},
}
