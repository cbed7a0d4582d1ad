package keyring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newKeyring(t *testing.T) (*Keyring, *structs.RootKey) {
	t.Helper()
	k, err := Open(filepath.Join(t.TempDir(), "keystore"))
	must.NoError(t, err)
	key, err := NewKey(now)
	must.NoError(t, err)
	must.NoError(t, k.Add(key))
	return k, key
}

func TestNewKey(t *testing.T) {
	a, err := NewKey(now)
	must.NoError(t, err)
	b, err := NewKey(now)
	must.NoError(t, err)
	must.True(t, ValidID(a.Meta.KeyID), must.Sprintf("key ID %q", a.Meta.KeyID))
	must.SliceLen(t, structs.RootKeyMaterialSize, a.Material)
	must.NotEq(t, a.Meta.KeyID, b.Meta.KeyID)
	must.False(t, bytes.Equal(a.Material, b.Material))
	must.Eq(t, structs.RootKeyStateActive, a.Meta.State)
	must.StrNotContains(t, a.String(), string(a.Material))
}

func TestKeyring_EncryptDecrypt(t *testing.T) {
	k, key := newKeyring(t)
	secret := []byte(`{"token":"s3cr3t"}`)
	aad := []byte("volume\x00default\x00data")
	sealed, err := k.Encrypt(key.Meta.KeyID, secret, aad)
	must.NoError(t, err)
	must.Eq(t, key.Meta.KeyID, sealed.KeyID)
	must.False(t, bytes.Contains(sealed.Ciphertext, []byte("s3cr3t")))

	again, err := k.Encrypt(key.Meta.KeyID, secret, aad)
	must.NoError(t, err)
	must.False(t, bytes.Equal(sealed.Nonce, again.Nonce), must.Sprint("every seal draws a fresh nonce"))

	plain, err := k.Decrypt(sealed, aad)
	must.NoError(t, err)
	must.Eq(t, secret, plain)

	tampered := sealed.Copy()
	tampered.Ciphertext[0] ^= 1
	cases := []struct {
		name   string
		sealed *structs.EncryptedSecrets
		aad    []byte
		want   error
	}{
		{"other object", sealed, []byte("volume\x00default\x00other"), ErrDecrypt},
		{"tampered", tampered, aad, ErrDecrypt},
		{"short nonce", &structs.EncryptedSecrets{KeyID: key.Meta.KeyID, Nonce: []byte{1}, Ciphertext: sealed.Ciphertext}, aad, ErrDecrypt},
		{"unknown key", &structs.EncryptedSecrets{KeyID: "00000000-0000-4000-8000-000000000000", Nonce: sealed.Nonce, Ciphertext: sealed.Ciphertext}, aad, ErrKeyMissing},
		{"nil", nil, aad, ErrDecrypt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Decrypt(tc.sealed, tc.aad)
			must.ErrorIs(t, err, tc.want)
		})
	}
	_, err = k.Encrypt("00000000-0000-4000-8000-000000000000", secret, aad)
	must.ErrorIs(t, err, ErrKeyMissing)
}

func TestKeyring_Add_WritesPrivateFileAndReopens(t *testing.T) {
	k, key := newKeyring(t)
	dirInfo, err := os.Stat(k.Dir())
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o700), dirInfo.Mode().Perm())
	path := filepath.Join(k.Dir(), key.Meta.KeyID+".json")
	fi, err := os.Stat(path)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
	leftovers, err := filepath.Glob(filepath.Join(k.Dir(), "*.tmp"))
	must.NoError(t, err)
	must.SliceEmpty(t, leftovers)

	sealed, err := k.Encrypt(key.Meta.KeyID, []byte("x"), nil)
	must.NoError(t, err)
	reopened, err := Open(k.Dir())
	must.NoError(t, err)
	must.Eq(t, []string{key.Meta.KeyID}, reopened.IDs())
	plain, err := reopened.Decrypt(sealed, nil)
	must.NoError(t, err)
	must.Eq(t, []byte("x"), plain)
	got, err := reopened.Get(key.Meta.KeyID)
	must.NoError(t, err)
	must.Eq(t, key.Material, got.Material)
	must.Eq(t, now, got.Meta.CreateTime)
}

func TestKeyring_Add(t *testing.T) {
	k, key := newKeyring(t)
	must.NoError(t, k.Add(key), must.Sprint("adding the same key again is a no-op"))

	other, err := NewKey(now)
	must.NoError(t, err)
	clash := &structs.RootKey{Meta: key.Meta.Copy(), Material: other.Material}
	must.ErrorIs(t, k.Add(clash), ErrKeyExists)

	bad := []*structs.RootKey{
		nil,
		{Meta: &structs.RootKeyMeta{KeyID: "../escape"}, Material: other.Material},
		{Meta: &structs.RootKeyMeta{KeyID: other.Meta.KeyID}, Material: []byte("short")},
	}
	for i, b := range bad {
		must.ErrorIs(t, k.Add(b), ErrBadKey, must.Sprintf("bad key %d", i))
	}
	must.Eq(t, []string{key.Meta.KeyID}, k.IDs())
	must.True(t, k.Has(key.Meta.KeyID))
	must.False(t, k.Has(other.Meta.KeyID))
	_, err = k.Get(other.Meta.KeyID)
	must.ErrorIs(t, err, ErrKeyMissing)
}

func TestOpen_RefusesUntrustedFiles(t *testing.T) {
	key, err := NewKey(now)
	must.NoError(t, err)
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  error
	}{
		{"readable by others", func(t *testing.T, dir string) {
			must.NoError(t, os.Chmod(filepath.Join(dir, key.Meta.KeyID+".json"), 0o644))
		}, nil},
		{"garbage", func(t *testing.T, dir string) {
			must.NoError(t, os.WriteFile(filepath.Join(dir, key.Meta.KeyID+".json"), []byte("{"), 0o600))
		}, ErrBadKey},
		{"name does not match", func(t *testing.T, dir string) {
			must.NoError(t, os.Rename(filepath.Join(dir, key.Meta.KeyID+".json"), filepath.Join(dir, "other.json")))
		}, ErrBadKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "keystore")
			k, err := Open(dir)
			must.NoError(t, err)
			must.NoError(t, k.Add(key))
			tc.setup(t, dir)
			_, err = Open(dir)
			must.Error(t, err)
			if tc.want != nil {
				must.True(t, errors.Is(err, tc.want), must.Sprintf("got %v", err))
			}
		})
	}
}

func TestOpen_ClosesAnOpenDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keystore")
	must.NoError(t, os.Mkdir(dir, 0o755))
	_, err := Open(dir)
	must.NoError(t, err)
	fi, err := os.Stat(dir)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o700), fi.Mode().Perm())
}

func TestKeyring_Remove(t *testing.T) {
	k, key := newKeyring(t)
	id := key.Meta.KeyID
	path := filepath.Join(k.Dir(), id+".json")
	must.NoError(t, k.Remove(id))
	must.False(t, k.Has(id))
	_, err := os.Stat(path)
	must.ErrorIs(t, err, os.ErrNotExist)
	must.NoError(t, k.Remove(id), must.Sprint("removing a key not there is a no-op"))
	must.ErrorIs(t, k.Remove("../escape"), ErrBadKey)

	reopened, err := Open(k.Dir())
	must.NoError(t, err)
	must.SliceEmpty(t, reopened.IDs())
	must.NoError(t, reopened.Add(key), must.Sprint("the ID may be added again"))
}
