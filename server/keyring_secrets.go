package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/berth-csi/berth/server/keyring"
	"github.com/berth-csi/berth/structs"
)

// Volume secrets never reach raft in clear: every volume write seals them
// (sealVolumeSecrets) under the active root key, and every server-side use
// that needs them in clear (a call to a plugin, the claiming client's node
// secrets) opens them from state at that moment (volumeSecrets). The
// additional data binds a ciphertext to its volume's namespace and ID.

// rekeyBatch is how many volumes one raft write moves to another key.
const rekeyBatch = 256

func volumeAAD(vol *structs.CSIVolume) []byte {
	ns := vol.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	return []byte("berth/csi_volume\x00" + ns + "\x00" + vol.ID)
}

// activeRootKey returns the ID of the key new secrets are sealed with. No
// key yet, or a key whose material has not reached this server, is
// Unavailable: retry.
func (s *Server) activeRootKey() (string, error) {
	active, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return "", err
	}
	if active == nil && s.isLeader() {
		// A write that came before the leader loop made the first key:
		// make it now, once the log is caught up (an earlier key may be
		// in it).
		if err := s.waitConsistentReads("keyring"); err != nil {
			return "", err
		}
		if err := s.ensureRootKey(); err != nil {
			return "", err
		}
		if active, err = s.State().ActiveRootKeyMeta(nil); err != nil {
			return "", err
		}
	}
	if active == nil {
		return "", structs.NewError(structs.CodeUnavailable,
			"the cluster has no root key yet to encrypt secrets with: the leader makes one when it takes office; retry")
	}
	if !s.keys.ring.Has(active.KeyID) {
		s.kickKeyReplication()
		return "", s.keyMissing(active.KeyID)
	}
	return active.KeyID, nil
}

// keyMissing is the error for a key whose material is not on this server:
// Unavailable while another server may have it, Internal once every other
// server answered that it lacks it (replicateKeys).
func (s *Server) keyMissing(id string) error {
	if s.keys.isLost(id) {
		return structs.NewError(structs.CodeInternal,
			"root key %s is lost: no server has its material; volumes sealed under it must be registered again with their secrets%s",
			id, s.lostKeyHint(id))
	}
	return structs.NewError(structs.CodeUnavailable, "the root key %s is not on server %s yet; retry", id, s.config.NodeName)
}

// lostKeyHint tells how to get out of a lost active key: nothing can be
// sealed until another key is made.
func (s *Server) lostKeyHint(id string) string {
	if active, err := s.State().ActiveRootKeyMeta(nil); err == nil && active != nil && active.KeyID == id {
		return ", after a new active key is made with `berth operator root keyring rotate`"
	}
	return ""
}

// sealSecrets seals secrets for vol under the active key; nil for none.
func (s *Server) sealSecrets(vol *structs.CSIVolume, secrets structs.CSISecrets) (*structs.EncryptedSecrets, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	keyID, err := s.activeRootKey()
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(map[string]string(secrets)) // not CSISecrets: its JSON redacts
	if err != nil {
		return nil, structs.NewError(structs.CodeInternal, "volume %q: encode secrets: %v", vol.ID, err)
	}
	sealed, err := s.keys.ring.Encrypt(keyID, plain, volumeAAD(vol))
	if errors.Is(err, keyring.ErrKeyMissing) {
		return nil, s.keyMissing(keyID)
	}
	if err != nil {
		return nil, structs.NewError(structs.CodeInternal, "volume %q: encrypt secrets: %v", vol.ID, err)
	}
	return sealed, nil
}

// sealVolumeSecrets readies a volume for a raft write: its Secrets, sealed
// under the active key, go to EncryptedSecrets (whatever the caller put
// there is dropped) and Secrets is cleared.
func (s *Server) sealVolumeSecrets(vol *structs.CSIVolume) error {
	sealed, err := s.sealSecrets(vol, vol.Secrets)
	if err != nil {
		return err
	}
	vol.EncryptedSecrets = sealed
	vol.Secrets = nil
	return nil
}

// sealedVolumes returns copies of vols ready for a raft write.
func (s *Server) sealedVolumes(vols []*structs.CSIVolume) ([]*structs.CSIVolume, error) {
	out := make([]*structs.CSIVolume, len(vols))
	for i, vol := range vols {
		c := vol.Copy()
		if err := s.sealVolumeSecrets(c); err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// volumeSecrets opens the secrets of a volume read from state. A volume
// stored before encryption has them in clear. A key not on this server yet
// is Unavailable (retry); a ciphertext that does not open is Internal.
func (s *Server) volumeSecrets(vol *structs.CSIVolume) (structs.CSISecrets, error) {
	if vol.EncryptedSecrets == nil {
		return vol.Secrets.Copy(), nil
	}
	plain, err := s.keys.ring.Decrypt(vol.EncryptedSecrets, volumeAAD(vol))
	switch {
	case errors.Is(err, keyring.ErrKeyMissing):
		s.kickKeyReplication()
		return nil, s.keyMissing(vol.EncryptedSecrets.KeyID)
	case err != nil:
		return nil, structs.NewError(structs.CodeInternal,
			"volume %q: its secrets do not decrypt under root key %s; register the volume again with its secrets",
			vol.ID, vol.EncryptedSecrets.KeyID)
	}
	var secrets map[string]string
	if err := json.Unmarshal(plain, &secrets); err != nil {
		return nil, structs.NewError(structs.CodeInternal, "volume %q: decrypted secrets are malformed: %v", vol.ID, err)
	}
	return structs.CSISecrets(secrets), nil
}

// rekeyVolumes seals again, under the active key, the secrets of volumes
// stored in clear and, with all, of volumes sealed under another key. A
// volume written meanwhile is left to that write (it sealed them); one
// whose key is not on this server is skipped and logged. It returns how
// many volumes moved.
func (s *Server) rekeyVolumes(ctx context.Context, all bool) (int, error) {
	keyID, err := s.activeRootKey()
	if err != nil {
		return 0, err
	}
	iter, err := s.State().CSIVolumes(nil)
	if err != nil {
		return 0, err
	}
	var (
		batch []*structs.CSIVolumeRekey
		moved int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, _, err := raftApply[int](s, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Rekey: batch})
		batch = nil
		moved += n
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if ctx.Err() != nil {
			return moved, ctx.Err()
		}
		vol := raw.(*structs.CSIVolume)
		inClear := vol.EncryptedSecrets == nil && len(vol.Secrets) > 0
		otherKey := vol.EncryptedSecrets != nil && vol.EncryptedSecrets.KeyID != keyID
		if !inClear && !(all && otherKey) {
			continue
		}
		secrets, err := s.volumeSecrets(vol)
		if err != nil {
			s.logger.Warn("keyring: cannot open a volume's secrets to seal them again; skipped", "volume", vol.ID, "error", err)
			continue
		}
		sealed, err := s.sealSecrets(vol, secrets)
		if err != nil {
			return moved, err
		}
		if sealed == nil {
			continue // nothing left to keep secret
		}
		batch = append(batch, &structs.CSIVolumeRekey{Namespace: vol.Namespace, ID: vol.ID,
			ModifyIndex: vol.ModifyIndex, EncryptedSecrets: sealed})
		if len(batch) == rekeyBatch {
			if err := flush(); err != nil {
				return moved, err
			}
		}
	}
	return moved, flush()
}
