package state

import (
	"cmp"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// TableJobVersions keeps each job's last versions (JobVersionsKept), for
// `berth job history` and `berth job revert`.
const TableJobVersions = "job_versions"

// JobVersionsKept is how many versions of a job are kept; older ones are
// removed as new ones are written (Nomad keeps 6).
const JobVersionsKept = 6

func jobVersionsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobVersions,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:   indexID,
				Unique: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					stringField("Namespace"),
					stringField("ID"),
					&memdb.UintFieldIndex{Field: "Version"},
				}},
			},
			// indexJob finds one job's versions: an exact (namespace, ID)
			// match, where a prefix scan of indexID would find job "web2"
			// with "web".
			indexJob: {
				Name: indexJob,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					stringField("Namespace"),
					stringField("ID"),
				}},
			},
		},
	}
}

// setJobVersionTxn gives j (about to replace existing, nil for a new job)
// its version: existing's when the spec is the same (and existing's submit
// time), the next one when it changed. A new version is kept in the
// versions table, and the oldest beyond JobVersionsKept are removed.
func setJobVersionTxn(txn *memdb.Txn, index uint64, j, existing *structs.Job) error {
	// The servers number versions, whatever the request said.
	v, isNew := structs.NextJobVersion(existing, j)
	j.Version = v
	if !isNew {
		j.SubmitTime = existing.SubmitTime
		return nil
	}
	if err := txn.Insert(TableJobVersions, j); err != nil {
		return errInternal("insert job version", err)
	}
	versions, err := jobVersionsTxn(txn, nil, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	for i := JobVersionsKept; i < len(versions); i++ {
		if err := txn.Delete(TableJobVersions, versions[i]); err != nil {
			return errInternal("delete job version", err)
		}
	}
	return bumpIndexes(txn, index, TableJobVersions)
}

// deleteJobVersionsTxn removes every kept version of a job (it was purged).
func deleteJobVersionsTxn(txn *memdb.Txn, index uint64, namespace, id string) error {
	n, err := txn.DeleteAll(TableJobVersions, indexJob, namespace, id)
	if err != nil {
		return errInternal("delete job versions", err)
	}
	if n == 0 {
		return nil
	}
	return bumpIndexes(txn, index, TableJobVersions)
}

// JobVersions lists a job's kept versions, newest first.
func (s *StateStore) JobVersions(ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	return jobVersionsTxn(s.db.Txn(false), ws, namespace, id)
}

// JobVersion reads one kept version of a job; nil when it is not kept.
func (s *StateStore) JobVersion(ws memdb.WatchSet, namespace, id string, version uint64) (*structs.Job, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	watch, raw, err := s.db.Txn(false).FirstWatch(TableJobVersions, indexID, namespace, id, version)
	if err != nil {
		return nil, errInternal("read job version", err)
	}
	ws.Add(watch)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Job), nil
}

func jobVersionsTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	iter, err := txn.Get(TableJobVersions, indexJob, namespace, id)
	if err != nil {
		return nil, errInternal("read job versions", err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Job))
	}
	// memdb's uint index is a varint, which does not sort: sort here.
	slices.SortFunc(out, func(a, b *structs.Job) int { return cmp.Compare(b.Version, a.Version) })
	return out, nil
}
