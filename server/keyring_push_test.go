package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// keyFile is where server s keeps key id.
func keyFile(s *servertest.TestServer, id string) string {
	return filepath.Join(s.Config.DataDir, "keystore", id+".json")
}

// keyHolders names the servers, running or not, whose keystore holds a
// file for key id now.
func keyHolders(t *testing.T, c *servertest.TestCluster, id string) []string {
	t.Helper()
	var names []string
	for _, s := range c.Servers {
		_, err := os.Stat(keyFile(s, id))
		if err == nil {
			names = append(names, s.Config.NodeName)
			continue
		}
		must.ErrorIs(t, err, os.ErrNotExist)
	}
	return names
}

// keystoreIDs lists the key files of s's keystore by key ID.
func keystoreIDs(t *testing.T, s *servertest.TestServer) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(s.Config.DataDir, "keystore", "*.json"))
	must.NoError(t, err)
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = strings.TrimSuffix(filepath.Base(n), ".json")
	}
	return ids
}

// mustKeysOnMajority checks that every key raft lists is, now, in the
// keystore of at least 2 of the 3 servers.
func mustKeysOnMajority(t *testing.T, c *servertest.TestCluster, keys []*structs.RootKeyMeta) {
	t.Helper()
	for _, k := range keys {
		holders := keyHolders(t, c, k.KeyID)
		must.Greater(t, 1, len(holders), must.Sprintf("root key %s is listed but only in the keystores of %v", k.KeyID, holders))
	}
}

// TestCluster_KeyringRotate_KeyOnMajorityFirst: a key's metadata is
// committed only once its material is on a majority of the servers, so
// the moment a rotation returns every listed key is on 2 of 3 servers,
// with a follower down too; the follower fetches it when it comes back.
func TestCluster_KeyringRotate_KeyOnMajorityFirst(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader := c.Leader()
	waitFor(t, 20*time.Second, "the first root key", func() bool { return len(listKeys(t, leader)) == 1 })
	mustKeysOnMajority(t, c, listKeys(t, leader))

	for range 3 {
		var rot structs.KeyringRotateResponse
		must.NoError(t, call(t, c.Followers()[0], "Keyring.Rotate", &structs.KeyringRotateRequest{}, &rot))
		keys := listKeys(t, leader)
		must.Eq(t, rot.Key.KeyID, keys[len(keys)-1].KeyID)
		mustKeysOnMajority(t, c, keys)
	}

	down := c.Followers()[0]
	c.Kill(down.Index)
	var rot structs.KeyringRotateResponse
	must.NoError(t, call(t, leader, "Keyring.Rotate", &structs.KeyringRotateRequest{}, &rot),
		must.Sprint("two of three servers are enough"))
	must.SliceContainsAll(t, []string{leader.Config.NodeName, c.Followers()[0].Config.NodeName}, keyHolders(t, c, rot.Key.KeyID))
	mustKeysOnMajority(t, c, listKeys(t, leader))

	back := c.Restart(down.Index)
	waitFor(t, 30*time.Second, "the restarted server to fetch the new key", func() bool { return back.HasRootKey(rot.Key.KeyID) })
}

// TestCluster_KeyringRotate_ShortOfMajority: when the new key cannot
// reach a majority, the rotation fails with Unavailable, names how many
// servers got it, and commits nothing; the leader keeps no copy.
func TestCluster_KeyringRotate_ShortOfMajority(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader := c.Leader()
	waitFor(t, 20*time.Second, "the first root key", func() bool { return len(listKeys(t, leader)) == 1 })
	before := listKeys(t, leader)
	for _, s := range c.Running() {
		waitFor(t, 20*time.Second, "the first key in the state of "+s.Name(), func() bool {
			keys, err := s.State().RootKeyMetas(nil)
			return err == nil && len(keys) == 1
		})
	}
	leaderFiles := keystoreIDs(t, leader)

	t.Run("followers that cannot store it", func(t *testing.T) {
		// A file where the keystore directory was: the followers keep
		// running, and their Keyring.PutKey fails.
		for _, f := range c.Followers() {
			dir := filepath.Join(f.Config.DataDir, "keystore")
			must.NoError(t, os.RemoveAll(dir))
			must.NoError(t, os.WriteFile(dir, nil, 0o600))
		}
		var rot structs.KeyringRotateResponse
		err := call(t, leader, "Keyring.Rotate", &structs.KeyringRotateRequest{}, &rot)
		must.ErrorIs(t, err, structs.ErrUnavailable)
		must.StrContains(t, err.Error(), "reached 1 of 3 servers")
		must.Nil(t, rot.Key)
		for _, s := range c.Running() {
			keys, err := s.State().RootKeyMetas(nil)
			must.NoError(t, err)
			must.Eq(t, before, keys, must.Sprintf("keys in the state of %s", s.Name()))
		}
		must.Eq(t, leaderFiles, keystoreIDs(t, leader), must.Sprint("the leader removed its copy"))
	})

	t.Run("followers stopped", func(t *testing.T) {
		for _, f := range c.Followers() {
			c.Kill(f.Index)
		}
		// Called on the server itself: it may already have stepped down,
		// and a Keyring.Rotate would then find no leader to forward to.
		meta, err := leader.MakeRootKey()
		must.ErrorIs(t, err, structs.ErrUnavailable)
		must.StrContains(t, err.Error(), "reached 1 of 3 servers")
		must.Nil(t, meta)
		keys, err := leader.State().RootKeyMetas(nil)
		must.NoError(t, err)
		must.Eq(t, before, keys)
		must.Eq(t, leaderFiles, keystoreIDs(t, leader))
	})
}

// TestCluster_KeyLost: a key whose material no server has any more (every
// keystore wiped) is reported lost, plainly and not as a retry, once every
// server has answered; while one is down it might still have it, and it
// is Unavailable.
func TestCluster_KeyLost(t *testing.T) {
	c := servertest.Cluster(t, 3)
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	index := registerSecretVolume(t, c.Leader(), "secretvol")
	keyID := listKeys(t, c.Leader())[0].KeyID
	for _, s := range c.Running() {
		waitApplied(t, s, index)
	}
	for _, s := range c.Servers {
		c.Kill(s.Index)
		must.NoError(t, os.RemoveAll(filepath.Join(s.Config.DataDir, "keystore")))
	}

	first, second := c.Restart(0), c.Restart(1)
	c.WaitForLeader(t, 30*time.Second)
	waitApplied(t, first, index)
	waitApplied(t, second, index)
	_, err := first.VolumeSecrets("default", "secretvol")
	must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("the server still down may have the key"))
	must.StrContains(t, err.Error(), "retry")

	waitApplied(t, c.Restart(2), index)
	for _, s := range []*servertest.TestServer{first, second} {
		waitFor(t, 60*time.Second, "the key reported lost on "+s.Name(), func() bool {
			_, err := s.VolumeSecrets("default", "secretvol")
			return err != nil && !strings.Contains(err.Error(), "retry")
		})
		_, err := s.VolumeSecrets("default", "secretvol")
		must.ErrorIs(t, err, structs.ErrInternal)
		must.StrContains(t, err.Error(), "root key "+keyID+" is lost: no server has its material")
		must.StrContains(t, err.Error(), "keyring rotate", must.Sprint("the lost key is the active one"))
	}
}
