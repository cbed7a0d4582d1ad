package state

import (
	"github.com/hashicorp/go-memdb"
)

// Table names. They name the rows of a snapshot too: never rename one.
const (
	TableIndex      = "index"
	TableNodes      = "nodes"
	TableJobs       = "jobs"
	TableAllocs     = "allocs"
	TableCSIVolumes = "csi_volumes"
	TableCSIPlugins = "csi_plugins"
)

// Tables lists every table in the order a snapshot persists and restores
// them.
var Tables = []string{
	TableIndex,
	TableNodes,
	TableJobs,
	TableAllocs,
	TableCSIPlugins,
	TableCSIVolumes,
	TableRootKeys,
	TableACLPolicies,
	TableACLTokens,
	TableJobVersions,
}

// Index names.
const (
	indexID         = "id"          // every table's primary index
	indexNodeID     = "node_id"     // allocs by node
	indexJob        = "job"         // allocs by (namespace, job)
	indexCSIPlugin  = "csi_plugin"  // jobs by the plugins they run; nodes by the plugins they report
	indexExternalID = "external_id" // volumes by (plugin, external ID)
	indexClaimAlloc = "claim_alloc" // volumes by the allocs of their claims
	indexClaimNode  = "claim_node"  // volumes by the nodes of their claims
	indexReleasing  = "releasing"   // volumes by whether a claim is being released

	prefixSuffix = "_prefix" // memdb's suffix for a prefix scan of an index
)

// IndexEntry is a row of the index table: the last raft index that changed
// the table named Key.
type IndexEntry struct {
	Key   string
	Value uint64
}

// Schema returns the go-memdb schema of the state store.
func Schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableIndex:      indexTableSchema(),
		TableNodes:      nodesTableSchema(),
		TableJobs:       jobsTableSchema(),
		TableAllocs:     allocsTableSchema(),
		TableCSIVolumes: csiVolumesTableSchema(),
		TableCSIPlugins: csiPluginsTableSchema(),
		TableRootKeys:   rootKeysTableSchema(),

		TableACLPolicies: aclPoliciesTableSchema(),
		TableACLTokens:   aclTokensTableSchema(),

		TableJobVersions: jobVersionsTableSchema(),
	}}
}

func stringField(field string) *memdb.StringFieldIndex {
	return &memdb.StringFieldIndex{Field: field}
}

func idIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: indexID, Unique: true, Indexer: stringField(field)}
}

// namespacedIDIndex is a primary index on (Namespace, field). It supports
// prefix scans of field within one namespace.
func namespacedIDIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:   indexID,
		Unique: true,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			stringField("Namespace"),
			stringField(field),
		}},
	}
}

func indexTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    TableIndex,
		Indexes: map[string]*memdb.IndexSchema{indexID: idIndex("Key")},
	}
}

func nodesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNodes,
		Indexes: map[string]*memdb.IndexSchema{
			indexID:     idIndex("ID"),
			indexModify: modifyIndexSchema(), // see modified.go
			// Not unique: a secret proves a node only together with the
			// node's ID; this index answers "is it any node's secret".
			indexSecretHash: {
				Name:         indexSecretHash,
				AllowMissing: true,
				Indexer:      stringField("SecretHash"),
			},
			// The nodes that run a plugin, either side: a plugin's
			// instances, in node ID order.
			indexCSIPlugin: {
				Name:         indexCSIPlugin,
				AllowMissing: true,
				Indexer:      nodeCSIPluginIndexer,
			},
		},
	}
}

func jobsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobs,
		Indexes: map[string]*memdb.IndexSchema{
			indexID:     namespacedIDIndex("ID"),
			indexModify: modifyIndexSchema(),
			indexCSIPlugin: {
				Name:         indexCSIPlugin,
				AllowMissing: true,
				Indexer:      jobCSIPluginIndexer,
			},
		},
	}
}

func allocsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableAllocs,
		Indexes: map[string]*memdb.IndexSchema{
			indexID:     idIndex("ID"),
			indexModify: modifyIndexSchema(),
			indexNodeID: {
				Name:         indexNodeID,
				AllowMissing: true,
				Indexer:      stringField("NodeID"),
			},
			indexJob: {
				Name:         indexJob,
				AllowMissing: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					stringField("Namespace"),
					stringField("JobID"),
				}},
			},
		},
	}
}

func csiVolumesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableCSIVolumes,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: namespacedIDIndex("ID"),
			// Not unique to memdb, which would silently overwrite: the
			// writes refuse a second volume on one storage volume
			// (externalIDConflictTxn), with an error naming the first.
			// Its prefix scan by plugin lists a plugin's volumes
			// (volumesOfPluginTxn): no index of their own.
			indexExternalID: {
				Name:         indexExternalID,
				AllowMissing: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					stringField("PluginID"),
					stringField("ExternalID"),
				}},
			},
			indexClaimAlloc: {
				Name:         indexClaimAlloc,
				AllowMissing: true,
				Indexer:      volumeClaimAllocIndexer,
			},
			indexClaimNode: {
				Name:         indexClaimNode,
				AllowMissing: true,
				Indexer:      volumeClaimNodeIndexer,
			},
			// The volume watcher reads and watches only the volumes with
			// a claim being released, so that its cost grows with those,
			// not with the store. Only those have an entry: a volume at
			// rest costs the index nothing.
			indexReleasing: {
				Name:         indexReleasing,
				AllowMissing: true,
				Indexer:      volumeReleasingIndexer,
			},
		},
	}
}

func csiPluginsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    TableCSIPlugins,
		Indexes: map[string]*memdb.IndexSchema{indexID: idIndex("ID")},
	}
}
