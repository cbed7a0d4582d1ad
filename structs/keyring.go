package structs

import "time"

// RootKeyState says what a root key is used for. The strings are persisted
// in raft and shown by the API: append only, never rename.
type RootKeyState string

const (
	// RootKeyStateActive: the key new secrets are encrypted with. At most
	// one key is active.
	RootKeyStateActive RootKeyState = "active"
	// RootKeyStateInactive: kept to decrypt what was encrypted with it.
	RootKeyStateInactive RootKeyState = "inactive"
)

// Valid reports whether s is a known state.
func (s RootKeyState) Valid() bool {
	return s == RootKeyStateActive || s == RootKeyStateInactive
}

// RootKeyMeta is what raft holds of a root key: its ID, when it was made
// and its state. The key material never enters raft: it lives in each
// server's keystore (data dir) and travels between servers over RPC.
type RootKeyMeta struct {
	KeyID      string
	CreateTime time.Time
	State      RootKeyState

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy.
func (m *RootKeyMeta) Copy() *RootKeyMeta {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// Active reports whether new secrets are encrypted with this key.
func (m *RootKeyMeta) Active() bool { return m.State == RootKeyStateActive }

// RootKeyMaterialSize is the size of a root key: AES-256.
const RootKeyMaterialSize = 32

// RootKey is a root key with its material, as it travels between servers
// (Keyring.PutKey, Keyring.GetKey) and sits in a server's keystore. Material is never
// shown: JSON drops it and String redacts it; only msgpack carries it.
type RootKey struct {
	Meta     *RootKeyMeta
	Material []byte `codec:"Material" json:"-"`
}

func (k *RootKey) String() string {
	if k == nil || k.Meta == nil {
		return "RootKey(<nil>)"
	}
	return "RootKey(" + k.Meta.KeyID + ", " + Redacted + ")"
}

// GoString is used by %#v.
func (k *RootKey) GoString() string { return k.String() }

// EncryptedSecrets are secrets sealed with AES-256-GCM under the root key
// KeyID. The additional data (not stored) binds them to the object that
// holds them, so a ciphertext copied to another object does not open.
type EncryptedSecrets struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// Copy returns a deep copy.
func (e *EncryptedSecrets) Copy() *EncryptedSecrets {
	if e == nil {
		return nil
	}
	return &EncryptedSecrets{
		KeyID:      e.KeyID,
		Nonce:      append([]byte(nil), e.Nonce...),
		Ciphertext: append([]byte(nil), e.Ciphertext...),
	}
}

// RootKeyUpsertRequest writes a root key's metadata (Key), moves volumes'
// secrets onto another key (Rekey), or both, in one write. A key written
// active makes every other key inactive.
type RootKeyUpsertRequest struct {
	Key   *RootKeyMeta
	Rekey []*CSIVolumeRekey
	WriteRequest
}

// CSIVolumeRekey replaces a volume's stored secrets with the same secrets
// sealed again (under the active key, or for the first time for a volume
// stored in clear). It applies only while the volume is still at
// ModifyIndex: a volume written meanwhile was sealed by that write, and is
// left as it is.
type CSIVolumeRekey struct {
	Namespace        string
	ID               string
	ModifyIndex      uint64
	EncryptedSecrets *EncryptedSecrets
}

// KeyringListRequest lists the root keys' metadata.
type KeyringListRequest struct {
	QueryOptions
}

// KeyringListResponse answers KeyringListRequest, oldest key first.
type KeyringListResponse struct {
	Keys []*RootKeyMeta
	QueryMeta
}

// KeyringRotateRequest makes a new active root key. Full also re-encrypts
// every volume's secrets with it; otherwise they move to the new key on
// their next write.
type KeyringRotateRequest struct {
	Full bool
	WriteRequest
}

// KeyringRotateResponse answers KeyringRotateRequest with the new key, and
// for a full rotation how many volumes were re-encrypted.
type KeyringRotateResponse struct {
	Key         *RootKeyMeta
	Reencrypted int
	WriteMeta
}

// KeyringGetKeyRequest asks a server for a root key's material. Only
// another server may ask.
type KeyringGetKeyRequest struct {
	KeyID string
	QueryOptions
}

// KeyringGetKeyResponse answers KeyringGetKeyRequest.
type KeyringGetKeyResponse struct {
	Key *RootKey
	QueryMeta
}

// KeyringPutKeyRequest gives a server a new root key's material: the
// leader sends it to the other servers before it commits the key's
// metadata. Only a server may send one.
type KeyringPutKeyRequest struct {
	Key *RootKey
	WriteRequest
}

// KeyringPutKeyResponse answers KeyringPutKeyRequest.
type KeyringPutKeyResponse struct {
	WriteMeta
}
