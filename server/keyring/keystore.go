package keyring

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-csi/berth/internal/atomicfile"
	"github.com/berth-csi/berth/structs"
)

const (
	dirMode = 0o700
	fileExt = ".json"
)

// keyFile is a key as its file holds it. State is raft's, not the file's.
type keyFile struct {
	KeyID      string
	CreateTime time.Time
	Material   []byte // base64 in JSON
}

// loadDir reads every key file of dir, creating dir first if needed. A
// file that others may read, or that is malformed, is an error naming it:
// the server must not start on a keystore it cannot trust.
func loadDir(dir string) ([]*structs.RootKey, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("keyring: create keystore %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("keyring: keystore %s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, dirMode); err != nil {
			return nil, fmt.Errorf("keyring: keystore %s is open to other users (mode %o) and cannot be closed: %w", dir, fi.Mode().Perm(), err)
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+fileExt))
	if err != nil {
		return nil, fmt.Errorf("keyring: list keystore %s: %w", dir, err)
	}
	var keys []*structs.RootKey
	for _, path := range names {
		key, err := readKey(path)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func readKey(path string) (*structs.RootKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("keyring: key file %s is readable by other users (mode %o); run `chmod 600 %s`", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: key file %s: %v", ErrBadKey, path, err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), fileExt); f.KeyID != want {
		return nil, fmt.Errorf("%w: key file %s holds key %q", ErrBadKey, path, f.KeyID)
	}
	key := &structs.RootKey{
		Meta:     &structs.RootKeyMeta{KeyID: f.KeyID, CreateTime: f.CreateTime},
		Material: f.Material,
	}
	if err := validate(key); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return key, nil
}

// writeKey writes the key's file atomically, mode 0600
// (internal/atomicfile).
func writeKey(dir string, key *structs.RootKey) error {
	b, err := json.Marshal(keyFile{KeyID: key.Meta.KeyID, CreateTime: key.Meta.CreateTime, Material: key.Material})
	if err != nil {
		return fmt.Errorf("keyring: encode key %s: %w", key.Meta.KeyID, err)
	}
	if err := atomicfile.Write(filepath.Join(dir, key.Meta.KeyID+fileExt), b); err != nil {
		return fmt.Errorf("keyring: write key %s: %w", key.Meta.KeyID, err)
	}
	return nil
}

// removeKey deletes the key's file, if any, durably.
func removeKey(dir, id string) error {
	err := os.Remove(filepath.Join(dir, id+fileExt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keyring: remove key %s: %w", id, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keyring: sync keystore %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("keyring: sync keystore %s: %w", dir, err)
	}
	return nil
}
