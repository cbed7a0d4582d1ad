package server_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/keyring"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

const clusterSecret = "s3cr3t-value-XYZ"

// registerSecretVolume registers a volume holding clusterSecret through s.
func registerSecretVolume(t *testing.T, s *servertest.TestServer, id string) uint64 {
	t.Helper()
	vol := statetest.Volume(id, "hostpath")
	vol.Secrets = structs.CSISecrets{"token": clusterSecret}
	var resp structs.CSIVolumeRegisterResponse
	must.NoError(t, call(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{vol}}, &resp))
	return resp.Index
}

// listKeys lists the root keys through s.
func listKeys(t *testing.T, s *servertest.TestServer) []*structs.RootKeyMeta {
	t.Helper()
	var resp structs.KeyringListResponse
	must.NoError(t, call(t, s, "Keyring.List", &structs.KeyringListRequest{}, &resp))
	return resp.Keys
}

// grepDataDir lists the files under dir that hold needle, and how many
// files it read.
func grepDataDir(t *testing.T, dir string, needle []byte) (hits []string, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, needle) {
			rel, _ := filepath.Rel(dir, path)
			hits = append(hits, rel)
		}
		return nil
	})
	must.NoError(t, err)
	return hits, files
}

// TestCluster_SecretsEncryptedAtRest is issue 12's check: a volume's
// secret is in no file of any server's data dir (raft/raft.db, the raft
// snapshots, the keystore, serf's snapshot), while the servers can still open it for a plugin, on
// every server, after the key reached each over RPC.
func TestCluster_SecretsEncryptedAtRest(t *testing.T) {
	c := servertest.Cluster(t, 3)
	follower := c.Followers()[0]
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	index := registerSecretVolume(t, follower, "secretvol")

	keys := listKeys(t, follower)
	must.SliceLen(t, 1, keys, must.Sprint("the leader made the first root key"))
	keyID := keys[0].KeyID
	must.Eq(t, structs.RootKeyStateActive, keys[0].State)

	for _, s := range c.Running() {
		waitApplied(t, s, index)
		waitFor(t, 20*time.Second, "root key material on "+s.Name(), func() bool { return s.HasRootKey(keyID) })
		secrets, err := s.VolumeSecrets("default", "secretvol")
		must.NoError(t, err, must.Sprintf("server %s", s.Name()))
		must.Eq(t, clusterSecret, secrets["token"], must.Sprintf("server %s opens the secret for a plugin", s.Name()))

		key := filepath.Join(s.Config.DataDir, "keystore", keyID+".json")
		fi, err := os.Stat(key)
		must.NoError(t, err)
		must.Eq(t, os.FileMode(0o600), fi.Mode().Perm(), must.Sprintf("key file on %s", s.Name()))
		must.NoError(t, s.SnapshotRaft(), must.Sprintf("raft snapshot on %s", s.Name()))
	}

	for _, s := range c.Running() {
		snaps, err := filepath.Glob(filepath.Join(s.Config.DataDir, "raft", "snapshots", "*", "state.bin"))
		must.NoError(t, err)
		must.SliceNotEmpty(t, snaps, must.Sprintf("server %s wrote no raft snapshot", s.Name()))
		// The grep finds what is stored: the volume's external ID is in
		// the log and the snapshot.
		seen, _ := grepDataDir(t, s.Config.DataDir, []byte("ext-secretvol"))
		must.SliceContains(t, seen, "raft/raft.db", must.Sprintf("server %s: control string not in raft.db", s.Name()))
		must.True(t, slicesHasPrefix(seen, "raft/snapshots/"), must.Sprintf("server %s: control string not in a snapshot: %v", s.Name(), seen))

		hits, files := grepDataDir(t, s.Config.DataDir, []byte(clusterSecret))
		must.Greater(t, 3, files)
		must.SliceEmpty(t, hits, must.Sprintf("server %s holds the secret in clear in %v", s.Name(), hits))
	}
}

func slicesHasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestCluster_KeyFetchedByServerWithoutIt: a server whose keystore lost
// the key fetches it from the others on restart, and opens the secrets.
func TestCluster_KeyFetchedByServerWithoutIt(t *testing.T) {
	c := servertest.Cluster(t, 3)
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	index := registerSecretVolume(t, c.Leader(), "secretvol")
	keyID := listKeys(t, c.Leader())[0].KeyID

	victim := c.Followers()[0]
	waitApplied(t, victim, index)
	waitFor(t, 20*time.Second, "the key on "+victim.Name(), func() bool { return victim.HasRootKey(keyID) })
	c.Kill(victim.Index)
	must.NoError(t, os.RemoveAll(filepath.Join(victim.Config.DataDir, "keystore")))

	restarted := c.Restart(victim.Index)
	waitApplied(t, restarted, index)
	waitFor(t, 30*time.Second, "the restarted server to fetch the key", func() bool { return restarted.HasRootKey(keyID) })
	secrets, err := restarted.VolumeSecrets("default", "secretvol")
	must.NoError(t, err)
	must.Eq(t, clusterSecret, secrets["token"])
	fi, err := os.Stat(filepath.Join(victim.Config.DataDir, "keystore", keyID+".json"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestCluster_KeyringRotate: after a rotation new writes use the new key,
// volumes sealed under the old key still open, and a full rotation moves
// them to the new key.
func TestCluster_KeyringRotate(t *testing.T) {
	c := servertest.Cluster(t, 3)
	follower := c.Followers()[0]
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	registerSecretVolume(t, follower, "old")
	first := listKeys(t, follower)[0].KeyID

	var rot structs.KeyringRotateResponse
	must.NoError(t, call(t, follower, "Keyring.Rotate", &structs.KeyringRotateRequest{}, &rot))
	must.NotNil(t, rot.Key)
	must.NotEq(t, first, rot.Key.KeyID)
	must.Eq(t, structs.RootKeyStateActive, rot.Key.State)
	keys := listKeys(t, follower)
	must.SliceLen(t, 2, keys)
	must.Eq(t, first, keys[0].KeyID)
	must.Eq(t, structs.RootKeyStateInactive, keys[0].State, must.Sprint("the old key stays, inactive"))

	index := registerSecretVolume(t, follower, "new")
	for _, s := range c.Running() {
		waitApplied(t, s, index)
		waitFor(t, 20*time.Second, "the new key on "+s.Name(), func() bool { return s.HasRootKey(rot.Key.KeyID) })
		for _, id := range []string{"old", "new"} {
			secrets, err := s.VolumeSecrets("default", id)
			must.NoError(t, err)
			must.Eq(t, clusterSecret, secrets["token"], must.Sprintf("server %s, volume %s", s.Name(), id))
		}
	}
	must.Eq(t, first, sealedUnder(t, c.Leader(), "old"))
	must.Eq(t, rot.Key.KeyID, sealedUnder(t, c.Leader(), "new"))

	var full structs.KeyringRotateResponse
	must.NoError(t, call(t, c.Leader(), "Keyring.Rotate", &structs.KeyringRotateRequest{Full: true}, &full))
	must.Eq(t, 2, full.Reencrypted, must.Sprint("both volumes move to the third key"))
	for _, id := range []string{"old", "new"} {
		must.Eq(t, full.Key.KeyID, sealedUnder(t, c.Leader(), id))
		secrets, err := c.Leader().VolumeSecrets("default", id)
		must.NoError(t, err)
		must.Eq(t, clusterSecret, secrets["token"])
	}
}

func sealedUnder(t *testing.T, s *servertest.TestServer, id string) string {
	t.Helper()
	vol, err := s.State().CSIVolumeByID(nil, "default", id)
	must.NoError(t, err)
	must.NotNil(t, vol)
	must.MapEmpty(t, vol.Secrets)
	must.NotNil(t, vol.EncryptedSecrets)
	return vol.EncryptedSecrets.KeyID
}

// TestCluster_KeyringOverTLS: with mutual TLS the servers share the key
// over their server certificates, and no other certificate gets one or
// puts one.
func TestCluster_KeyringOverTLS(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	c := servertest.Cluster(t, 3, servertest.WithTLS(t, pki, gossipKey(t)))
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	index := registerSecretVolume(t, c.Followers()[0], "secretvol")
	keyID := listKeys(t, c.Leader())[0].KeyID
	for _, s := range c.Running() {
		waitApplied(t, s, index)
		waitFor(t, 20*time.Second, "the key on "+s.Name(), func() bool { return s.HasRootKey(keyID) })
		secrets, err := s.VolumeSecrets("default", "secretvol")
		must.NoError(t, err)
		must.Eq(t, clusterSecret, secrets["token"])
	}

	cases := []struct {
		name string
		tls  *tlsutil.Config
		want error
	}{
		{"server certificate", pki.Cert(t, "peer", tlsutil.RoleServer), nil},
		{"client certificate", pki.Cert(t, "client", tlsutil.RoleClient), structs.ErrPermissionDenied},
		{"cli certificate", pki.Cert(t, "cli", tlsutil.RoleCLI), structs.ErrPermissionDenied},
		{"plain text", nil, structs.ErrUnavailable},
	}
	target := c.Followers()[0]
	for _, tc := range cases {
		t.Run(tc.name+" gets a key", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var reply structs.KeyringGetKeyResponse
			err := server.TLSPool(t, tc.tls).Call(ctx, target.RPCAddr(), "Keyring.GetKey",
				&structs.KeyringGetKeyRequest{KeyID: keyID}, &reply)
			if tc.want != nil {
				must.ErrorIs(t, err, tc.want)
				must.Nil(t, reply.Key)
				return
			}
			must.NoError(t, err)
			must.SliceLen(t, structs.RootKeyMaterialSize, reply.Key.Material)
		})
		t.Run(tc.name+" puts a key", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			key := newTestRootKey(t)
			err := server.TLSPool(t, tc.tls).Call(ctx, target.RPCAddr(), "Keyring.PutKey",
				&structs.KeyringPutKeyRequest{Key: key}, &structs.KeyringPutKeyResponse{})
			if tc.want != nil {
				must.ErrorIs(t, err, tc.want)
				must.False(t, target.HasRootKey(key.Meta.KeyID))
				must.SliceEmpty(t, keyHolders(t, c, key.Meta.KeyID))
				return
			}
			must.NoError(t, err)
			must.True(t, target.HasRootKey(key.Meta.KeyID))
			must.Eq(t, []string{target.Config.NodeName}, keyHolders(t, c, key.Meta.KeyID))
		})
	}
	// In-process (the HTTP API's way in) both are refused too.
	err := call(t, c.Leader(), "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: keyID}, &structs.KeyringGetKeyResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	key := newTestRootKey(t)
	err = call(t, c.Leader(), "Keyring.PutKey", &structs.KeyringPutKeyRequest{Key: key}, &structs.KeyringPutKeyResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.False(t, c.Leader().HasRootKey(key.Meta.KeyID))
}

// newTestRootKey makes a root key that no server has.
func newTestRootKey(t *testing.T) *structs.RootKey {
	t.Helper()
	key, err := keyring.NewKey(time.Now())
	must.NoError(t, err)
	return key
}
