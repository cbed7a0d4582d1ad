package state_test

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func aclToken(accessor, hash string, policies ...string) *structs.ACLToken {
	return &structs.ACLToken{AccessorID: accessor, SecretHash: hash, Name: accessor,
		Type: structs.ACLTokenTypeClient, Policies: policies, CreateTime: time.Unix(100, 0).UTC()}
}

func TestStateStore_ACLPolicies(t *testing.T) {
	s := statetest.New(t)
	must.NoError(t, s.UpsertACLPolicies(10, []*structs.ACLPolicy{
		{Name: "readonly", Rules: "node {\n  policy = \"read\"\n}\n"},
		{Name: "deploy", Rules: "namespace \"default\" {\n  policy = \"write\"\n}\n"},
	}))

	ws := memdb.NewWatchSet()
	p, err := s.ACLPolicyByName(ws, "readonly")
	must.NoError(t, err)
	must.Eq(t, 10, p.CreateIndex)

	must.NoError(t, s.UpsertACLPolicies(11, []*structs.ACLPolicy{{Name: "readonly", Description: "read only", Rules: p.Rules}}))
	must.True(t, watchFired(ws), must.Sprint("a policy write must wake its readers"))
	p, err = s.ACLPolicyByName(nil, "readonly")
	must.NoError(t, err)
	must.Eq(t, 10, p.CreateIndex)
	must.Eq(t, 11, p.ModifyIndex)
	must.Eq(t, "read only", p.Description)
	must.Eq(t, 11, mustIndex(t, s, state.TableACLPolicies))

	iter, err := s.ACLPoliciesByNamePrefix(nil, "")
	must.NoError(t, err)
	must.Eq(t, []string{"deploy", "readonly"}, policyNames(iter))
	iter, err = s.ACLPoliciesByNamePrefix(nil, "re")
	must.NoError(t, err)
	must.Eq(t, []string{"readonly"}, policyNames(iter))

	// A delete naming a missing policy deletes nothing.
	err = s.DeleteACLPolicies(12, []string{"deploy", "missing"})
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrContains(t, err.Error(), `"missing"`)
	p, err = s.ACLPolicyByName(nil, "deploy")
	must.NoError(t, err)
	must.NotNil(t, p)

	must.NoError(t, s.DeleteACLPolicies(13, []string{"deploy"}))
	p, err = s.ACLPolicyByName(nil, "deploy")
	must.NoError(t, err)
	must.Nil(t, p)
	must.Eq(t, 13, mustIndex(t, s, state.TableACLPolicies))

	must.ErrorIs(t, s.UpsertACLPolicies(14, nil), structs.ErrBadRequest)
	must.ErrorIs(t, s.UpsertACLPolicies(14, []*structs.ACLPolicy{{}}), structs.ErrBadRequest)
}

func TestStateStore_ACLTokens(t *testing.T) {
	s := statetest.New(t)
	tok := aclToken("acc-1", "hash-1", "readonly")
	tok.SecretID = "must-not-be-stored"
	must.NoError(t, s.UpsertACLTokens(10, []*structs.ACLToken{tok, aclToken("acc-2", "hash-2")}))

	got, err := s.ACLTokenBySecretHash(nil, "hash-1")
	must.NoError(t, err)
	must.Eq(t, "acc-1", got.AccessorID)
	must.Eq(t, "", got.SecretID)
	must.Eq(t, 10, got.CreateIndex)
	got, err = s.ACLTokenBySecretHash(nil, "")
	must.NoError(t, err)
	must.Nil(t, got)

	// An update keeps the secret, create time and create index.
	ws := memdb.NewWatchSet()
	_, err = s.ACLTokenByAccessorID(ws, "acc-1")
	must.NoError(t, err)
	upd := aclToken("acc-1", "another-hash", "readonly", "deploy")
	upd.CreateTime = time.Unix(999, 0)
	must.NoError(t, s.UpsertACLTokens(11, []*structs.ACLToken{upd}))
	must.True(t, watchFired(ws))
	got, err = s.ACLTokenByAccessorID(nil, "acc-1")
	must.NoError(t, err)
	must.Eq(t, "hash-1", got.SecretHash)
	must.Eq(t, time.Unix(100, 0).UTC(), got.CreateTime)
	must.Eq(t, 10, got.CreateIndex)
	must.Eq(t, 11, got.ModifyIndex)
	must.Eq(t, []string{"readonly", "deploy"}, got.Policies)

	// A new token needs a hash of its own.
	must.ErrorIs(t, s.UpsertACLTokens(12, []*structs.ACLToken{aclToken("acc-3", "")}), structs.ErrBadRequest)
	must.ErrorIs(t, s.UpsertACLTokens(12, []*structs.ACLToken{aclToken("acc-3", "hash-2")}), structs.ErrConflict)
	must.ErrorIs(t, s.UpsertACLTokens(12, []*structs.ACLToken{{}}), structs.ErrBadRequest)

	iter, err := s.ACLTokensByAccessorPrefix(nil, "acc-")
	must.NoError(t, err)
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n++
	}
	must.Eq(t, 2, n)

	must.ErrorIs(t, s.DeleteACLTokens(13, []string{"acc-1", "missing"}), structs.ErrNotFound)
	must.NoError(t, s.DeleteACLTokens(14, []string{"acc-1"}))
	got, err = s.ACLTokenBySecretHash(nil, "hash-1")
	must.NoError(t, err)
	must.Nil(t, got)
	must.Eq(t, 14, mustIndex(t, s, state.TableACLTokens))
}

func TestStateStore_BootstrapACLToken(t *testing.T) {
	s := statetest.New(t)
	idx, err := s.ACLBootstrapIndex()
	must.NoError(t, err)
	must.Zero(t, idx)

	mgmt := aclToken("root", "root-hash")
	mgmt.Type = structs.ACLTokenTypeManagement
	must.ErrorIs(t, s.BootstrapACLToken(5, 0, aclToken("client", "h")), structs.ErrBadRequest)
	err = s.BootstrapACLToken(6, 3, mgmt)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "the cluster was never bootstrapped, so there is no reset index 3")
	must.NoError(t, s.BootstrapACLToken(7, 0, mgmt))
	idx, err = s.ACLBootstrapIndex()
	must.NoError(t, err)
	must.Eq(t, 7, idx)

	// Even with the first token deleted, bootstrap stays done.
	must.NoError(t, s.DeleteACLTokens(8, []string{"root"}))
	again := aclToken("root-2", "root-hash-2")
	again.Type = structs.ACLTokenTypeManagement
	err = s.BootstrapACLToken(9, 0, again)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "ACL bootstrap already done (reset index: 7)")
	must.StrContains(t, err.Error(), "write 7 into the file acl-bootstrap-reset")
	got, err := s.ACLTokenByAccessorID(nil, "root-2")
	must.NoError(t, err)
	must.Nil(t, got)
}

// TestStateStore_BootstrapACLToken_Reset: a bootstrap that expects the
// current reset index is applied and moves the index on; one that
// expects an older index, as a second reset raced against the first
// would, is refused and writes nothing.
func TestStateStore_BootstrapACLToken_Reset(t *testing.T) {
	s := statetest.New(t)
	mgmt := func(id string) *structs.ACLToken {
		tok := aclToken(id, id+"-hash")
		tok.Type = structs.ACLTokenTypeManagement
		return tok
	}
	must.NoError(t, s.BootstrapACLToken(7, 0, mgmt("first")))
	must.NoError(t, s.BootstrapACLToken(12, 7, mgmt("reset")))
	idx, err := s.ACLBootstrapIndex()
	must.NoError(t, err)
	must.Eq(t, 12, idx)

	err = s.BootstrapACLToken(13, 7, mgmt("racer"))
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "it expected reset index 7, but the reset index is now 12")
	racer, err := s.ACLTokenByAccessorID(nil, "racer")
	must.NoError(t, err)
	must.Nil(t, racer)
	idx, err = s.ACLBootstrapIndex()
	must.NoError(t, err)
	must.Eq(t, 12, idx)

	for _, id := range []string{"first", "reset"} {
		tok, err := s.ACLTokenByAccessorID(nil, id)
		must.NoError(t, err)
		must.NotNil(t, tok, must.Sprintf("token %s is kept", id))
	}
}

func TestStateStore_NodeBySecretHash(t *testing.T) {
	s := statetest.New(t)
	n := statetest.Node("n1")
	n.SecretHash = "node-hash"
	upsertNodes(t, s, 10, n, statetest.Node("n2"))
	got, err := s.NodeBySecretHash(nil, "node-hash")
	must.NoError(t, err)
	must.Eq(t, "n1", got.ID)
	got, err = s.NodeBySecretHash(nil, "")
	must.NoError(t, err)
	must.Nil(t, got)
	got, err = s.NodeBySecretHash(nil, "other")
	must.NoError(t, err)
	must.Nil(t, got)
}

func TestStateStore_Restore_ACLRows(t *testing.T) {
	src := statetest.New(t)
	must.NoError(t, src.UpsertACLPolicies(5, []*structs.ACLPolicy{{Name: "readonly", Rules: "node {\n  policy = \"read\"\n}\n"}}))
	mgmt := aclToken("root", "root-hash")
	mgmt.Type = structs.ACLTokenTypeManagement
	must.NoError(t, src.BootstrapACLToken(6, 0, mgmt))

	snap, err := src.Snapshot()
	must.NoError(t, err)
	dst := statetest.New(t)
	r, err := dst.Restore()
	must.NoError(t, err)
	for _, table := range state.Tables {
		iter, err := snap.TableRows(table)
		must.NoError(t, err)
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			must.NoError(t, r.Insert(table, raw))
		}
	}
	must.NoError(t, r.Commit())

	p, err := dst.ACLPolicyByName(nil, "readonly")
	must.NoError(t, err)
	must.NotNil(t, p)
	tok, err := dst.ACLTokenBySecretHash(nil, "root-hash")
	must.NoError(t, err)
	must.Eq(t, "root", tok.AccessorID)
	idx, err := dst.ACLBootstrapIndex()
	must.NoError(t, err)
	must.Eq(t, 6, idx, must.Sprint("a restored store must remember that bootstrap is done"))

	bad, err := statetest.New(t).Restore()
	must.NoError(t, err)
	defer bad.Abort()
	must.ErrorIs(t, bad.Insert(state.TableACLTokens, &structs.ACLPolicy{}), structs.ErrInternal)
}

func policyNames(iter memdb.ResultIterator) []string {
	var names []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		names = append(names, raw.(*structs.ACLPolicy).Name)
	}
	return names
}

func watchFired(ws memdb.WatchSet) bool {
	return !ws.Watch(time.After(time.Second))
}
