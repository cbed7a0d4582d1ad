package state

import (
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// TableRootKeys holds the root keys' metadata (never their material). It
// names snapshot rows too: never rename it.
const TableRootKeys = "root_keys"

func rootKeysTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    TableRootKeys,
		Indexes: map[string]*memdb.IndexSchema{indexID: idIndex("KeyID")},
	}
}

// UpsertRootKey writes a root key's metadata and moves volumes' secrets
// onto another key, in one transaction; either may be empty, not both.
//
// A key written active makes every other active key inactive, so at most
// one key is active; rewriting a key keeps its CreateIndex. Each rekey
// entry replaces the stored secrets of its volume (and drops any it held
// in clear) only while the volume is still at the entry's ModifyIndex: a
// volume written meanwhile, or deleted, is left alone. The key it names
// must be known. rekeyed counts the volumes changed.
func (s *StateStore) UpsertRootKey(index uint64, key *structs.RootKeyMeta, rekey []*structs.CSIVolumeRekey) (rekeyed int, err error) {
	if key == nil && len(rekey) == 0 {
		return 0, errBadRequest("root key upsert: the request carries no key and no volume")
	}
	// writeTxn: a rekeyed volume changes (its ModifyIndex), an event
	// (its secrets are never in one); a key alone makes none.
	txn := s.writeTxn(index)
	defer txn.Abort()

	if key != nil {
		if err := upsertRootKeyTxn(txn, index, key); err != nil {
			return 0, err
		}
	}
	for i, r := range rekey {
		changed, err := rekeyVolumeTxn(txn, index, i, r)
		if err != nil {
			return 0, err
		}
		if changed {
			rekeyed++
		}
	}
	if rekeyed > 0 {
		if err := bumpIndex(txn, index, TableCSIVolumes); err != nil {
			return 0, err
		}
	}
	txn.Commit()
	return rekeyed, nil
}

func upsertRootKeyTxn(txn *memdb.Txn, index uint64, in *structs.RootKeyMeta) error {
	if in.KeyID == "" {
		return errBadRequest("root key upsert: the key has no ID")
	}
	if !in.State.Valid() {
		return errBadRequest("root key %s: state %q is not active or inactive", in.KeyID, in.State)
	}
	key := in.Copy()
	existing, err := rootKeyByIDTxn(txn, nil, key.KeyID)
	if err != nil {
		return err
	}
	key.CreateIndex = index
	if existing != nil {
		key.CreateIndex = existing.CreateIndex
	}
	key.ModifyIndex = index
	if key.Active() {
		iter, err := txn.Get(TableRootKeys, indexID)
		if err != nil {
			return errInternal("list root keys", err)
		}
		var demote []*structs.RootKeyMeta
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if other := raw.(*structs.RootKeyMeta); other.KeyID != key.KeyID && other.Active() {
				demote = append(demote, other)
			}
		}
		for _, other := range demote {
			c := other.Copy()
			c.State = structs.RootKeyStateInactive
			c.ModifyIndex = index
			if err := txn.Insert(TableRootKeys, c); err != nil {
				return errInternal("insert root key "+c.KeyID, err)
			}
		}
	}
	if err := txn.Insert(TableRootKeys, key); err != nil {
		return errInternal("insert root key "+key.KeyID, err)
	}
	return bumpIndex(txn, index, TableRootKeys)
}

func rekeyVolumeTxn(txn *memdb.Txn, index uint64, i int, r *structs.CSIVolumeRekey) (bool, error) {
	if r == nil || r.ID == "" || r.EncryptedSecrets == nil {
		return false, errBadRequest("volume rekey %d: give the volume and its sealed secrets", i+1)
	}
	known, err := rootKeyByIDTxn(txn, nil, r.EncryptedSecrets.KeyID)
	if err != nil {
		return false, err
	}
	if known == nil {
		return false, errBadRequest("volume %q: rekey under root key %q, which is not in the keyring", r.ID, r.EncryptedSecrets.KeyID)
	}
	ns := r.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	vol, err := volumeByIDTxn(txn, nil, ns, r.ID)
	if err != nil {
		return false, err
	}
	if vol == nil || vol.ModifyIndex != r.ModifyIndex {
		return false, nil
	}
	c := vol.Copy()
	c.Secrets = nil
	c.EncryptedSecrets = r.EncryptedSecrets.Copy()
	c.ModifyIndex = index
	if err := insertVolume(txn, c); err != nil {
		return false, err
	}
	return true, nil
}

func rootKeyByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.RootKeyMeta, error) {
	raw, err := firstWatch(txn, ws, TableRootKeys, indexID, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.RootKeyMeta), nil
}

// RootKeyMetaByID returns a root key's metadata, or nil.
func (s *StateStore) RootKeyMetaByID(ws memdb.WatchSet, id string) (*structs.RootKeyMeta, error) {
	return rootKeyByIDTxn(s.db.Txn(false), ws, id)
}

// RootKeyMetas lists every root key's metadata, oldest first (by
// CreateIndex, then ID).
func (s *StateStore) RootKeyMetas(ws memdb.WatchSet) ([]*structs.RootKeyMeta, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableRootKeys, indexID)
	if err != nil {
		return nil, err
	}
	var keys []*structs.RootKeyMeta
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		keys = append(keys, raw.(*structs.RootKeyMeta))
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].CreateIndex != keys[j].CreateIndex {
			return keys[i].CreateIndex < keys[j].CreateIndex
		}
		return keys[i].KeyID < keys[j].KeyID
	})
	return keys, nil
}

// ActiveRootKeyMeta returns the active root key's metadata, or nil when
// the leader has not made one yet.
func (s *StateStore) ActiveRootKeyMeta(ws memdb.WatchSet) (*structs.RootKeyMeta, error) {
	keys, err := s.RootKeyMetas(ws)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.Active() {
			return k, nil
		}
	}
	return nil, nil
}
