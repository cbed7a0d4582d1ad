package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
	"github.com/hashicorp/go-memdb"
)

// maxNamedVolumes is how many volumes a plugin delete refusal names.
const maxNamedVolumes = 5

// CSIPluginByID returns a plugin's row, with its counts and without its
// instances (CSIPluginPage, CSIPluginWithInstances), or nil if it does
// not exist.
func (s *StateStore) CSIPluginByID(ws memdb.WatchSet, id string) (*structs.CSIPlugin, error) {
	return pluginByIDTxn(s.db.Txn(false), ws, id)
}

func pluginByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.CSIPlugin, error) {
	raw, err := firstWatch(txn, ws, TableCSIPlugins, indexID, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.CSIPlugin), nil
}

// CSIPlugins iterates every plugin row by ID, as stored (not denormalized).
func (s *StateStore) CSIPlugins(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableCSIPlugins, indexID)
}

// CSIPluginsByIDPrefix iterates the plugin rows whose ID starts with prefix.
func (s *StateStore) CSIPluginsByIDPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableCSIPlugins, indexID+prefixSuffix, prefix)
}

// DeleteCSIPlugin deletes a plugin that nothing uses: no instance on any
// node, no running job, no registered volume. Otherwise it is a Conflict
// that names what still uses it.
func (s *StateStore) DeleteCSIPlugin(index uint64, id string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()

	plug, err := pluginByIDTxn(txn, nil, id)
	if err != nil {
		return err
	}
	if plug == nil {
		return errNotFound("plugin %q not found; check the plugin id (berth plugin status)", id)
	}

	var uses []string
	if !plug.IsEmpty() {
		page, more, err := pluginInstancesTxn(txn, nil, plug, "", maxNamedVolumes)
		if err != nil {
			return err
		}
		nodes := sortedKeys(page.Nodes)
		for n := range page.Controllers {
			if page.Nodes[n] == nil {
				nodes = append(nodes, n)
			}
		}
		sort.Strings(nodes)
		named := strings.Join(nodes, ", ")
		if more != "" {
			named += " and more"
		}
		uses = append(uses, fmt.Sprintf("it still runs on nodes %s (stop the plugin there)", named))
	}
	jobs, err := jobsRunningPlugin(txn, id)
	if err != nil {
		return err
	}
	if len(jobs) > 0 {
		names := make([]string, len(jobs))
		for i, j := range jobs {
			names[i] = j.Namespace + "/" + j.ID
		}
		uses = append(uses, fmt.Sprintf("jobs %s run it (stop them)", strings.Join(names, ", ")))
	}
	vols, err := volumesOfPlugin(txn, id)
	if err != nil {
		return err
	}
	if len(vols) > 0 {
		named := vols
		if len(named) > maxNamedVolumes {
			named = named[:maxNamedVolumes]
		}
		more := ""
		if len(vols) > len(named) {
			more = fmt.Sprintf(" and %d more", len(vols)-len(named))
		}
		uses = append(uses, fmt.Sprintf("%d volumes use it: %s%s (deregister them)",
			len(vols), strings.Join(named, ", "), more))
	}
	if len(uses) > 0 {
		return errConflict("plugin %q cannot be deleted: %s", id, strings.Join(uses, "; "))
	}

	if err := txn.Delete(TableCSIPlugins, plug); err != nil {
		return errInternal("delete plugin "+id, err)
	}
	if err := bumpIndex(txn, index, TableCSIPlugins); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// volumesOfPlugin lists "namespace/id" of every volume of a plugin, in all
// namespaces, sorted.
func volumesOfPlugin(txn *memdb.Txn, pluginID string) ([]string, error) {
	iter, err := volumesOfPluginTxn(txn, nil, pluginID)
	if err != nil {
		return nil, errInternal("read volumes by plugin "+pluginID, err)
	}
	var names []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		v := raw.(*structs.CSIVolume)
		names = append(names, v.Namespace+"/"+v.ID)
	}
	sort.Strings(names)
	return names, nil
}
