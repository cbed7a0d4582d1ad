package server

import (
	"context"
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/server/keyring"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// fullRotateRounds bounds the passes of a full rotation: a volume written
// during a pass was sealed under the new key by that write, or is taken
// by the next pass.
const fullRotateRounds = 3

// Keyring serves the root keyring: its metadata to operators, and the key
// material to the other servers only.
type Keyring struct{ srv *Server }

// List lists the root keys' metadata (never their material), oldest first.
func (k *Keyring) List(args *structs.KeyringListRequest, reply *structs.KeyringListResponse) error {
	return k.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		keys, err := st.RootKeyMetas(ws)
		if err != nil {
			return err
		}
		reply.Keys = make([]*structs.RootKeyMeta, len(keys))
		for i, key := range keys {
			reply.Keys[i] = key.Copy()
		}
		reply.Index, err = st.IndexWatch(ws, state.TableRootKeys)
		return err
	})
}

// Rotate makes a new active root key; the old ones stay, inactive, to
// decrypt what they sealed. Volumes move to the new key on their next
// write, or now with Full.
func (k *Keyring) Rotate(ctx context.Context, args *structs.KeyringRotateRequest, reply *structs.KeyringRotateResponse) error {
	meta, index, err := k.srv.newRootKey()
	if err != nil {
		return err
	}
	k.srv.logger.Info("keyring: rotated the root key", "key_id", meta.KeyID, "full", args.Full)
	reply.Key, reply.Index = meta, index
	if !args.Full {
		return nil
	}
	for range fullRotateRounds {
		n, err := k.srv.rekeyVolumes(ctx, true)
		reply.Reencrypted += n
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	reply.Index, err = k.srv.State().LatestIndex()
	return err
}

// GetKey gives a root key's material to another server that lacks it.
// Only a server may ask (allowServerOnly). With ACLs on and RPC in plain
// text that means a management token, which a server fetching a key does
// not hold (only a leader pushing one sends its leader token): run such a
// cluster with tls.rpc. It answers from this server's keystore, never
// forwarding.
func (k *Keyring) GetKey(ctx context.Context, args *structs.KeyringGetKeyRequest, reply *structs.KeyringGetKeyResponse) error {
	if !keyring.ValidID(args.KeyID) {
		return structs.NewError(structs.CodeBadRequest, "keyring: %q is not a root key ID", args.KeyID)
	}
	key, err := k.srv.keys.ring.Get(args.KeyID)
	if errors.Is(err, keyring.ErrKeyMissing) {
		return structs.NewError(structs.CodeNotFound, "the root key %s is not on server %s; ask another server", args.KeyID, k.srv.config.NodeName)
	}
	if err != nil {
		return err
	}
	reply.Key = key
	k.srv.setQueryMeta(&reply.QueryMeta)
	reply.Index, err = k.srv.State().Index(state.TableRootKeys)
	return err
}

// PutKey stores a new root key's material in this server's keystore: the
// leader sends it before it commits the key's metadata (spreadKey). Only a
// server may send one (allowServerOnly). A key already here with the
// same material is no error; with other material it is a Conflict. It
// never forwards.
func (k *Keyring) PutKey(ctx context.Context, args *structs.KeyringPutKeyRequest, reply *structs.KeyringPutKeyResponse) error {
	if args.Key == nil || args.Key.Meta == nil || !keyring.ValidID(args.Key.Meta.KeyID) {
		return structs.NewError(structs.CodeBadRequest, "Keyring.PutKey: the request holds no root key with a valid ID")
	}
	id := args.Key.Meta.KeyID
	err := k.srv.keys.ring.Add(args.Key)
	switch {
	case errors.Is(err, keyring.ErrKeyExists):
		return structs.NewError(structs.CodeConflict, "the root key %s is already on server %s with other material; it is kept", id, k.srv.config.NodeName)
	case errors.Is(err, keyring.ErrBadKey):
		return structs.NewError(structs.CodeBadRequest, "Keyring.PutKey: root key %s is malformed: %v", id, err)
	case err != nil:
		return structs.NewError(structs.CodeInternal, "store the root key %s on server %s: %v", id, k.srv.config.NodeName, err)
	}
	reply.Index, err = k.srv.State().LatestIndex()
	return err
}
