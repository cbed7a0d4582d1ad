package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// indexSecretHash finds a token (or a node) by the SHA-256 of its secret.
const indexSecretHash = "secret_hash"

// aclBootstrapKey is the index table's row that records the raft index of
// the ACL bootstrap; it is there once bootstrap is done, and snapshots
// carry it with the rest of the index table.
const aclBootstrapKey = "acl_bootstrap"

func aclTokensTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLTokens,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: idIndex("AccessorID"),
			indexSecretHash: {
				Name:    indexSecretHash,
				Unique:  true,
				Indexer: stringField("SecretHash"),
			},
		},
	}
}

// UpsertACLTokens creates tokens or updates them. A new token must carry
// its SecretHash; an update keeps the stored token's SecretHash,
// CreateTime and CreateIndex whatever the request says. A SecretID is
// never stored.
func (s *StateStore) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	if len(tokens) == 0 {
		return errBadRequest("acl token upsert: no tokens given")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()

	for _, in := range tokens {
		if err := upsertACLTokenTxn(txn, index, in); err != nil {
			return err
		}
	}
	if err := bumpIndex(txn, index, TableACLTokens); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func upsertACLTokenTxn(txn *memdb.Txn, index uint64, in *structs.ACLToken) error {
	if in == nil || in.AccessorID == "" {
		return errBadRequest("acl token upsert: a token has no accessor ID")
	}
	t := in.Copy()
	t.SecretID = ""
	existing, err := aclTokenByAccessorTxn(txn, nil, t.AccessorID)
	if err != nil {
		return err
	}
	if existing != nil {
		t.SecretHash = existing.SecretHash
		t.CreateTime = existing.CreateTime
		t.CreateIndex = existing.CreateIndex
	} else {
		if t.SecretHash == "" {
			return errBadRequest("acl token %s: a new token must carry its secret's hash", t.AccessorID)
		}
		other, err := txn.First(TableACLTokens, indexSecretHash, t.SecretHash)
		if err != nil {
			return errInternal("read acl token by secret", err)
		}
		if other != nil {
			return errConflict("acl token %s: another token has the same secret; make a new one", t.AccessorID)
		}
		t.CreateIndex = index
	}
	t.ModifyIndex = index
	if err := txn.Insert(TableACLTokens, t); err != nil {
		return errInternal("insert acl token "+t.AccessorID, err)
	}
	return nil
}

// DeleteACLTokens deletes tokens by accessor ID. Every one must exist, or
// nothing is deleted.
func (s *StateStore) DeleteACLTokens(index uint64, accessorIDs []string) error {
	if len(accessorIDs) == 0 {
		return errBadRequest("acl token delete: no accessor IDs given")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()

	for _, id := range accessorIDs {
		existing, err := aclTokenByAccessorTxn(txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil {
			return errNotFound("acl token %q not found; list tokens with `berth acl token list`", id)
		}
		if err := txn.Delete(TableACLTokens, existing); err != nil {
			return errInternal("delete acl token "+id, err)
		}
	}
	if err := bumpIndex(txn, index, TableACLTokens); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// BootstrapACLToken writes a management token made by `berth acl
// bootstrap` and records index as the reset index: the raft index of the
// latest bootstrap. resetIndex is the reset index the request expects: 0
// for the cluster's first bootstrap, the current one for a bootstrap
// after a reset (the acl-bootstrap-reset file on the leader). Any other
// is refused (Conflict), so of two bootstraps sent against the same reset
// index only the first is applied.
func (s *StateStore) BootstrapACLToken(index, resetIndex uint64, token *structs.ACLToken) error {
	if token == nil {
		return errBadRequest("acl bootstrap: the request carries no token")
	}
	if token.Type != structs.ACLTokenTypeManagement {
		return errBadRequest("acl bootstrap: the token must be a management token, not %q", token.Type)
	}
	txn := s.db.Txn(true)
	defer txn.Abort()

	var current uint64
	done, err := txn.First(TableIndex, indexID, aclBootstrapKey)
	if err != nil {
		return errInternal("read acl bootstrap", err)
	}
	if done != nil {
		current = done.(*IndexEntry).Value
	}
	if current != resetIndex {
		return aclBootstrapRefusal(current, resetIndex)
	}
	if err := upsertACLTokenTxn(txn, index, token); err != nil {
		return err
	}
	if err := txn.Insert(TableIndex, &IndexEntry{Key: aclBootstrapKey, Value: index}); err != nil {
		return errInternal("record acl bootstrap", err)
	}
	if err := bumpIndex(txn, index, TableACLTokens); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// aclBootstrapRefusal is the Conflict for a bootstrap that expected reset
// index want when the state's is current (0: never bootstrapped).
func aclBootstrapRefusal(current, want uint64) error {
	switch {
	case want == 0:
		return errConflict("ACL bootstrap already done (reset index: %d); use the management token made then, "+
			"or, if it is lost, write %d into the file acl-bootstrap-reset in the leader's server data dir "+
			"(<data_dir>/server) and run the bootstrap again", current, current)
	case current == 0:
		return errConflict("ACL bootstrap reset: the cluster was never bootstrapped, so there is no reset index %d; "+
			"remove the acl-bootstrap-reset file and run the bootstrap", want)
	default:
		return errConflict("ACL bootstrap reset: it expected reset index %d, but the reset index is now %d "+
			"(another bootstrap was applied first); use the token it made, or write %d into acl-bootstrap-reset and run the bootstrap again",
			want, current, current)
	}
}

// ACLBootstrapIndex returns the raft index of the ACL bootstrap, 0 when it
// has not happened.
func (s *StateStore) ACLBootstrapIndex() (uint64, error) {
	return s.Index(aclBootstrapKey)
}

// ACLTokenByAccessorID returns a token, or nil if it does not exist.
func (s *StateStore) ACLTokenByAccessorID(ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	return aclTokenByAccessorTxn(s.db.Txn(false), ws, id)
}

func aclTokenByAccessorTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	raw, err := firstWatch(txn, ws, TableACLTokens, indexID, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokenBySecretHash returns the token whose secret hashes to hash, or
// nil.
func (s *StateStore) ACLTokenBySecretHash(ws memdb.WatchSet, hash string) (*structs.ACLToken, error) {
	if hash == "" {
		return nil, nil
	}
	raw, err := firstWatch(s.db.Txn(false), ws, TableACLTokens, indexSecretHash, hash)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokensByAccessorPrefix iterates the tokens whose accessor ID starts
// with prefix ("" for all), by accessor ID.
func (s *StateStore) ACLTokensByAccessorPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableACLTokens, indexID+prefixSuffix, prefix)
}

// NodeBySecretHash returns a node whose secret hashes to hash, or nil.
func (s *StateStore) NodeBySecretHash(ws memdb.WatchSet, hash string) (*structs.Node, error) {
	if hash == "" {
		return nil, nil
	}
	raw, err := firstWatch(s.db.Txn(false), ws, TableNodes, indexSecretHash, hash)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}
