package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// ACL tables. They name snapshot rows too: never rename one.
const (
	TableACLPolicies = "acl_policies"
	TableACLTokens   = "acl_tokens"
)

func aclPoliciesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name:    TableACLPolicies,
		Indexes: map[string]*memdb.IndexSchema{indexID: idIndex("Name")},
	}
}

// UpsertACLPolicies writes policies; a rewritten policy keeps its
// CreateIndex. The rules were parsed by the endpoint; they are stored as
// written.
func (s *StateStore) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	if len(policies) == 0 {
		return errBadRequest("acl policy upsert: no policies given")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()

	for _, in := range policies {
		if in == nil || in.Name == "" {
			return errBadRequest("acl policy upsert: a policy has no name")
		}
		p := in.Copy()
		existing, err := aclPolicyByNameTxn(txn, nil, p.Name)
		if err != nil {
			return err
		}
		p.CreateIndex = index
		if existing != nil {
			p.CreateIndex = existing.CreateIndex
		}
		p.ModifyIndex = index
		if err := txn.Insert(TableACLPolicies, p); err != nil {
			return errInternal("insert acl policy "+p.Name, err)
		}
	}
	if err := bumpIndex(txn, index, TableACLPolicies); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteACLPolicies deletes policies by name. Every one must exist, or
// nothing is deleted. Tokens that name a deleted policy keep the name; it
// grants nothing until a policy of that name is written again.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	if len(names) == 0 {
		return errBadRequest("acl policy delete: no policy names given")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()

	for _, name := range names {
		existing, err := aclPolicyByNameTxn(txn, nil, name)
		if err != nil {
			return err
		}
		if existing == nil {
			return errNotFound("acl policy %q not found; list policies with `berth acl policy list`", name)
		}
		if err := txn.Delete(TableACLPolicies, existing); err != nil {
			return errInternal("delete acl policy "+name, err)
		}
	}
	if err := bumpIndex(txn, index, TableACLPolicies); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ACLPolicyByName returns a policy, or nil if it does not exist.
func (s *StateStore) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	return aclPolicyByNameTxn(s.db.Txn(false), ws, name)
}

func aclPolicyByNameTxn(txn *memdb.Txn, ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	raw, err := firstWatch(txn, ws, TableACLPolicies, indexID, name)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ACLPolicy), nil
}

// ACLPoliciesByNamePrefix iterates the policies whose name starts with
// prefix ("" for all), by name.
func (s *StateStore) ACLPoliciesByNamePrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableACLPolicies, indexID+prefixSuffix, prefix)
}
