package keyring

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Errors of the keyring, for errors.Is.
var (
	// ErrKeyMissing: the key's material is not in this keystore (yet).
	ErrKeyMissing = errors.New("keyring: root key not in this keystore")
	// ErrDecrypt: the ciphertext does not open with its key and additional
	// data: it was changed, or moved from another object.
	ErrDecrypt = errors.New("keyring: ciphertext does not open")
	// ErrBadKey: a key's ID or material is malformed.
	ErrBadKey = errors.New("keyring: malformed root key")
	// ErrKeyExists: a key of that ID is in the keystore with other material.
	ErrKeyExists = errors.New("keyring: root key already in the keystore with other material")
)

// Keyring is a server's set of root keys, backed by its keystore directory.
type Keyring struct {
	dir string

	mu   sync.RWMutex
	keys map[string]*entry // by key ID
}

type entry struct {
	key  *structs.RootKey
	aead cipher.AEAD
}

// Open reads every key in dir, creating dir (mode 0700) if it does not
// exist.
func Open(dir string) (*Keyring, error) {
	keys, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	k := &Keyring{dir: dir, keys: map[string]*entry{}}
	for _, key := range keys {
		e, err := newEntry(key)
		if err != nil {
			return nil, err
		}
		k.keys[key.Meta.KeyID] = e
	}
	return k, nil
}

// Dir is the keystore directory.
func (k *Keyring) Dir() string { return k.dir }

// NewKey makes a root key: 32 bytes from crypto/rand and a random UUID,
// active, made at now. It is not added to any keyring.
func NewKey(now time.Time) (*structs.RootKey, error) {
	material := make([]byte, structs.RootKeyMaterialSize)
	if _, err := rand.Read(material); err != nil {
		return nil, fmt.Errorf("keyring: make key material: %w", err)
	}
	return &structs.RootKey{
		Meta:     &structs.RootKeyMeta{KeyID: structs.NewUUID(), CreateTime: now.UTC(), State: structs.RootKeyStateActive},
		Material: material,
	}, nil
}

// Add writes the key to the keystore, then makes it usable. Adding a key
// that is there with the same material does nothing; with other material
// it is an error.
func (k *Keyring) Add(key *structs.RootKey) error {
	e, err := newEntry(key)
	if err != nil {
		return err
	}
	id := key.Meta.KeyID
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.keys[id]; ok {
		if bytes.Equal(old.key.Material, key.Material) {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrKeyExists, id)
	}
	if err := writeKey(k.dir, e.key); err != nil {
		return err
	}
	k.keys[id] = e
	return nil
}

// Remove deletes a key from the keystore and from memory; a key not here
// is no error. Only for a key nothing was sealed with: one whose metadata
// never reached raft.
func (k *Keyring) Remove(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w: key ID %q is not a UUID", ErrBadKey, id)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := removeKey(k.dir, id); err != nil {
		return err
	}
	delete(k.keys, id)
	return nil
}

// Has reports whether the key's material is here.
func (k *Keyring) Has(id string) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.keys[id]
	return ok
}

// Get returns a copy of the key, material included, or ErrKeyMissing.
func (k *Keyring) Get(id string) (*structs.RootKey, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	e, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrKeyMissing, id)
	}
	return copyKey(e.key), nil
}

// IDs lists the keys here, sorted.
func (k *Keyring) IDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Encrypt seals plaintext under key keyID, bound to aad.
func (k *Keyring) Encrypt(keyID string, plaintext, aad []byte) (*structs.EncryptedSecrets, error) {
	e, err := k.entry(keyID)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, e.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keyring: make nonce: %w", err)
	}
	return &structs.EncryptedSecrets{
		KeyID:      keyID,
		Nonce:      nonce,
		Ciphertext: e.aead.Seal(nil, nonce, plaintext, aad),
	}, nil
}

// Decrypt opens what Encrypt sealed with the same aad. A key not here is
// ErrKeyMissing; a ciphertext that does not open is ErrDecrypt.
func (k *Keyring) Decrypt(sealed *structs.EncryptedSecrets, aad []byte) ([]byte, error) {
	if sealed == nil {
		return nil, fmt.Errorf("%w: nothing to decrypt", ErrDecrypt)
	}
	e, err := k.entry(sealed.KeyID)
	if err != nil {
		return nil, err
	}
	if len(sealed.Nonce) != e.aead.NonceSize() {
		return nil, fmt.Errorf("%w: nonce of %d bytes, want %d", ErrDecrypt, len(sealed.Nonce), e.aead.NonceSize())
	}
	plain, err := e.aead.Open(nil, sealed.Nonce, sealed.Ciphertext, aad)
	if err != nil {
		return nil, fmt.Errorf("%w under root key %s", ErrDecrypt, sealed.KeyID)
	}
	return plain, nil
}

func (k *Keyring) entry(id string) (*entry, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	e, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrKeyMissing, id)
	}
	return e, nil
}

func newEntry(key *structs.RootKey) (*entry, error) {
	if err := validate(key); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key.Material)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadKey, key.Meta.KeyID, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadKey, key.Meta.KeyID, err)
	}
	return &entry{key: copyKey(key), aead: aead}, nil
}

// validate checks a key's ID (a UUID: it names a file) and material size.
func validate(key *structs.RootKey) error {
	if key == nil || key.Meta == nil {
		return fmt.Errorf("%w: no key", ErrBadKey)
	}
	if !ValidID(key.Meta.KeyID) {
		return fmt.Errorf("%w: key ID %q is not a UUID", ErrBadKey, key.Meta.KeyID)
	}
	if len(key.Material) != structs.RootKeyMaterialSize {
		return fmt.Errorf("%w: %s: material of %d bytes, want %d", ErrBadKey, key.Meta.KeyID, len(key.Material), structs.RootKeyMaterialSize)
	}
	return nil
}

// ValidID reports whether id has the form of a key ID: a lower-case UUID.
func ValidID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i, c := range id {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

func copyKey(key *structs.RootKey) *structs.RootKey {
	return &structs.RootKey{Meta: key.Meta.Copy(), Material: append([]byte(nil), key.Material...)}
}
