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

func rootKey(id string, st structs.RootKeyState) *structs.RootKeyMeta {
	return &structs.RootKeyMeta{KeyID: id, State: st, CreateTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func TestStateStore_UpsertRootKey(t *testing.T) {
	s := statetest.New(t)

	active, err := s.ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	must.Nil(t, active, must.Sprint("a fresh store has no key"))

	ws := memdb.NewWatchSet()
	_, err = s.RootKeyMetas(ws)
	must.NoError(t, err)
	must.NoError(t, upsertKey(s, 10, rootKey("k1", structs.RootKeyStateActive)))
	must.True(t, rootKeysWatchFired(ws), must.Sprint("a key write wakes list watchers"))

	// A new active key demotes the old one in the same write.
	must.NoError(t, upsertKey(s, 20, rootKey("k2", structs.RootKeyStateActive)))
	keys, err := s.RootKeyMetas(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, keys)
	must.Eq(t, "k1", keys[0].KeyID, must.Sprint("oldest first"))
	must.Eq(t, structs.RootKeyStateInactive, keys[0].State)
	must.Eq(t, uint64(10), keys[0].CreateIndex)
	must.Eq(t, uint64(20), keys[0].ModifyIndex)
	must.Eq(t, structs.RootKeyStateActive, keys[1].State)
	active, err = s.ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	must.Eq(t, "k2", active.KeyID)
	must.Eq(t, uint64(20), mustIndex(t, s, state.TableRootKeys))

	// Rewriting a key keeps its CreateIndex; an inactive write demotes nothing.
	must.NoError(t, upsertKey(s, 30, rootKey("k1", structs.RootKeyStateInactive)))
	k1, err := s.RootKeyMetaByID(nil, "k1")
	must.NoError(t, err)
	must.Eq(t, uint64(10), k1.CreateIndex)
	must.Eq(t, uint64(30), k1.ModifyIndex)
	active, err = s.ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	must.Eq(t, "k2", active.KeyID)

	missing, err := s.RootKeyMetaByID(nil, "nope")
	must.NoError(t, err)
	must.Nil(t, missing)
}

func TestStateStore_UpsertRootKey_Refusals(t *testing.T) {
	sealed := &structs.EncryptedSecrets{KeyID: "k1", Nonce: []byte{1}, Ciphertext: []byte{2}}
	cases := []struct {
		name  string
		key   *structs.RootKeyMeta
		rekey []*structs.CSIVolumeRekey
	}{
		{"nothing", nil, nil},
		{"no ID", rootKey("", structs.RootKeyStateActive), nil},
		{"unknown state", rootKey("k1", "retired"), nil},
		{"rekey without secrets", rootKey("k1", structs.RootKeyStateActive), []*structs.CSIVolumeRekey{{ID: "v"}}},
		{"rekey under an unknown key", nil, []*structs.CSIVolumeRekey{{ID: "v", EncryptedSecrets: sealed}}},
		// The key and its volumes are one write: a bad rekey drops the key too.
		{"nil rekey", rootKey("k1", structs.RootKeyStateActive), []*structs.CSIVolumeRekey{nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			_, err := s.UpsertRootKey(5, tc.key, tc.rekey)
			mustCode(t, structs.ErrBadRequest, err)
			must.Eq(t, uint64(0), mustIndex(t, s, state.TableRootKeys), must.Sprint("a refused write writes nothing"))
		})
	}
}

func TestStateStore_UpsertRootKey_Rekey(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 1, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	clear := statetest.Volume("clear", plugID)
	clear.Secrets = structs.CSISecrets{"token": "in-clear"}
	upsertVolumes(t, s, 2, clear, statetest.Volume("busy", plugID))
	upsertKey(s, 3, rootKey("k1", structs.RootKeyStateActive))
	busy := mustVolume(t, s, "busy")
	upsertVolumes(t, s, 4, busy.Copy()) // written again after the rekey was read

	sealed := &structs.EncryptedSecrets{KeyID: "k1", Nonce: []byte{1}, Ciphertext: []byte{2}}
	n, err := s.UpsertRootKey(5, nil, []*structs.CSIVolumeRekey{
		{ID: "clear", ModifyIndex: 2, EncryptedSecrets: sealed},
		{ID: "busy", ModifyIndex: 2, EncryptedSecrets: sealed},
		{ID: "gone", ModifyIndex: 2, EncryptedSecrets: sealed},
	})
	must.NoError(t, err)
	must.Eq(t, 1, n, must.Sprint("only the volume still at its read index moves"))

	got := mustVolume(t, s, "clear")
	must.MapEmpty(t, got.Secrets, must.Sprint("secrets in clear are dropped"))
	must.Eq(t, sealed, got.EncryptedSecrets)
	must.Eq(t, uint64(5), got.ModifyIndex)
	must.Eq(t, uint64(2), got.CreateIndex)
	must.Eq(t, uint64(5), mustIndex(t, s, state.TableCSIVolumes))
	must.Nil(t, mustVolume(t, s, "busy").EncryptedSecrets)
	must.Eq(t, uint64(3), mustIndex(t, s, state.TableRootKeys), must.Sprint("a rekey alone leaves the keys"))
}

func TestStateStore_RootKeys_Restore(t *testing.T) {
	src := statetest.New(t)
	must.NoError(t, upsertKey(src, 3, rootKey("k1", structs.RootKeyStateActive)))
	k1, err := src.RootKeyMetaByID(nil, "k1")
	must.NoError(t, err)
	dst := restored(t, map[string][]any{state.TableRootKeys: {k1}})
	got, err := dst.ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	must.Eq(t, k1, got)
}

func upsertKey(s *state.StateStore, index uint64, key *structs.RootKeyMeta) error {
	_, err := s.UpsertRootKey(index, key, nil)
	return err
}

func rootKeysWatchFired(ws memdb.WatchSet) bool {
	return !ws.Watch(time.After(time.Second))
}
