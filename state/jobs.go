package state

import (
	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// upsertJobTxn inserts a job and returns the plugins its new and old
// versions run, for finishJobWrite.
func upsertJobTxn(txn *memdb.Txn, index uint64, job *structs.Job) ([]string, error) {
	if job == nil || job.ID == "" {
		return nil, errBadRequest("job: missing id")
	}
	j := job.Copy()
	if j.Namespace == "" {
		j.Namespace = structs.DefaultNamespace
	}
	existing, err := jobByIDTxn(txn, nil, j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	j.CreateIndex = index
	if existing != nil {
		j.CreateIndex = existing.CreateIndex
	}
	j.ModifyIndex = index
	if err := setJobVersionTxn(txn, index, j, existing); err != nil {
		return nil, err
	}
	if err := txn.Insert(TableJobs, j); err != nil {
		return nil, errInternal("insert job "+j.ID, err)
	}
	plugins := j.CSIPluginIDs()
	if existing != nil {
		plugins = append(plugins, existing.CSIPluginIDs()...)
	}
	return plugins, nil
}

// finishJobWrite deletes the unused plugin rows among plugins and bumps the
// index of every table changed.
func finishJobWrite(txn *memdb.Txn, index uint64, plugins []string) error {
	tables := []string{TableJobs}
	deleted := false
	for _, id := range plugins {
		d, err := deletePluginIfUnused(txn, id)
		if err != nil {
			return err
		}
		deleted = deleted || d
	}
	if deleted {
		tables = append(tables, TableCSIPlugins)
	}
	return bumpIndexes(txn, index, tables...)
}

// JobByID returns a job, or nil if it does not exist.
func (s *StateStore) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	if namespace == "" {
		namespace = structs.DefaultNamespace
	}
	return jobByIDTxn(s.db.Txn(false), ws, namespace, id)
}

func jobByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	raw, err := firstWatch(txn, ws, TableJobs, indexID, namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// Jobs iterates every job of every namespace.
func (s *StateStore) Jobs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableJobs, indexID)
}
