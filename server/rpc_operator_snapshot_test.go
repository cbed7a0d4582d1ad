package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// longTTL keeps the test nodes, which no client heartbeats for, ready.
func longTTL(cfg *server.Config) { cfg.HeartbeatTTL = 10 * time.Minute }

// saveSnapshot saves a snapshot file through s, chunk by chunk, as the
// HTTP API does.
func saveSnapshot(t *testing.T, s *servertest.TestServer) ([]byte, *structs.SnapshotSaveResponse) {
	t.Helper()
	var save structs.SnapshotSaveResponse
	must.NoError(t, call(t, s, "Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &save))
	var file []byte
	for {
		var chunk structs.SnapshotReadResponse
		must.NoError(t, call(t, s, "Operator.SnapshotRead", &structs.SnapshotReadRequest{Handle: save.Handle, Offset: int64(len(file))}, &chunk))
		file = append(file, chunk.Data...)
		if chunk.EOF {
			break
		}
	}
	must.EqOp(t, save.Size, int64(len(file)))
	return file, &save
}

// restoreSnapshot uploads file through s in chunks of chunk bytes and
// restores it.
func restoreSnapshot(t *testing.T, s *servertest.TestServer, file []byte, chunk int) (*structs.SnapshotRestoreResponse, error) {
	t.Helper()
	var up structs.SnapshotUploadResponse
	for off := 0; off < len(file); off += chunk {
		data := file[off:min(off+chunk, len(file))]
		err := call(t, s, "Operator.SnapshotUpload", &structs.SnapshotUploadRequest{Handle: up.Handle, Offset: int64(off), Data: data}, &up)
		if err != nil {
			return nil, err
		}
	}
	var resp structs.SnapshotRestoreResponse
	err := call(t, s, "Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Handle: up.Handle}, &resp)
	return &resp, err
}

// snapshotJob runs one writer of the volume "data".
func snapshotJob() *structs.Job {
	return &structs.Job{ID: "db", Namespace: structs.DefaultNamespace, Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "db", Count: 1,
		Volumes: map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: "data",
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
		Tasks: []*structs.Task{{Name: "db", Driver: "exec", Config: map[string]any{"command": "/bin/true"},
			VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/data"}}}},
	}}}
}

// seedSnapshotWorld writes, through s, a node running the hostpath node
// plugin, the volume "data" (with a secret) and a job whose allocation
// holds the volume's write claim. It returns the allocation's ID.
func seedSnapshotWorld(t *testing.T, s *servertest.TestServer) string {
	t.Helper()
	registerPluginNode(t, s, "node-1", "hostpath")
	registerSecretVolume(t, s, "data")
	var reg structs.JobRegisterResponse
	must.NoError(t, call(t, s, "Job.Register", &structs.JobRegisterRequest{Job: snapshotJob()}, &reg))
	must.SliceLen(t, 1, reg.Placed, must.Sprintf("placement failures: %v", reg.Failures))
	return reg.Placed[0].ID
}

// tables reads every row of every table but the index table from s's
// state, by table.
func tables(t *testing.T, s *servertest.TestServer) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	for _, table := range state.Tables {
		if table == state.TableIndex {
			continue
		}
		iter, err := s.State().TableRows(table)
		must.NoError(t, err)
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out[table] = append(out[table], raw)
		}
	}
	return out
}

// rowCounts is tables' row count per table.
func rowCounts(rows map[string][]any) map[string]int {
	out := map[string]int{}
	for table, r := range rows {
		out[table] = len(r)
	}
	return out
}

// TestOperatorSnapshot_SaveAndRestoreIntoFreshCluster is the backup's
// round trip on real raft: a snapshot of a cluster with a node, a plugin,
// a volume whose write claim an allocation of a job holds, saved through a
// follower, restored through a follower into a fresh 3-server cluster,
// brings every row back on every server, and the restored cluster's
// leader works on it (its volume watcher frees the claim once the node
// goes down). The file holds neither the volume's secret nor the root
// key's material; with a server's keystore copied over, as the docs tell,
// every server of the new cluster opens the secret.
func TestOperatorSnapshot_SaveAndRestoreIntoFreshCluster(t *testing.T) {
	src := servertest.Cluster(t, 3, longTTL)
	allocID := seedSnapshotWorld(t, src.Followers()[0])
	keys := listKeys(t, src.Leader())
	must.SliceLen(t, 1, keys)
	keyID := keys[0].KeyID
	want := tables(t, src.Leader())
	before, err := src.Leader().State().LatestIndex()
	must.NoError(t, err)

	file, save := saveSnapshot(t, src.Followers()[0])
	must.Positive(t, save.Index)
	must.EqOp(t, snapshotfile.Format, save.Meta.Format)

	// What the file holds: the state, with the secret sealed and no key
	// material.
	var stateBin bytes.Buffer
	meta, err := snapshotfile.Read(bytes.NewReader(file), &stateBin)
	must.NoError(t, err)
	must.EqOp(t, save.Index, meta.Index)
	must.True(t, bytes.Contains(stateBin.Bytes(), []byte("ext-data")), must.Sprint("control string: the volume is in the state"))
	must.False(t, bytes.Contains(stateBin.Bytes(), []byte(clusterSecret)), must.Sprint("the volume's secret is in the snapshot in clear"))
	material := keyMaterial(t, src.Servers[0], keyID)
	must.False(t, bytes.Contains(stateBin.Bytes(), material), must.Sprint("root key material is in the snapshot"))
	must.False(t, bytes.Contains(file, material))

	// The new cluster: fresh servers, one of which was given the old
	// cluster's keystore before it started.
	keystore := filepath.Dir(keyFile(src.Servers[0], keyID))
	dst := servertest.Cluster(t, 3, longTTL, func(cfg *server.Config) {
		if cfg.NodeName == "server-1" {
			copyKeystore(t, keystore, filepath.Join(cfg.DataDir, "keystore"))
		}
	})
	registerPluginNode(t, dst.Leader(), "node-new", "other")
	registerVolume(t, dst.Leader(), "only-in-the-new-cluster", "other")

	resp, err := restoreSnapshot(t, dst.Followers()[0], file, 1000)
	must.NoError(t, err)
	must.EqOp(t, save.Index, resp.Meta.Index)
	must.Greater(t, save.Index, resp.Index, must.Sprint("raft restores past the snapshot's index"))
	must.SliceEmpty(t, resp.MissingRootKeys, must.Sprint("server-1 holds the key: the leader fetched it"))
	counts := map[string]int{}
	for _, c := range resp.Tables {
		counts[c.Table] = c.Rows
	}
	for table, n := range rowCounts(want) {
		must.EqOp(t, n, counts[table], must.Sprintf("restored rows of %s", table))
	}
	after, err := src.Leader().State().LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, before, after, must.Sprint("the source cluster changed while the test compared it"))

	for _, s := range dst.Running() {
		waitFor(t, 20*time.Second, "the restored state on "+s.Name(), func() bool {
			vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "data")
			return err == nil && vol != nil
		})
		got := tables(t, s)
		must.Eq(t, want, got, must.Sprintf("every row of every table on %s", s.Name()))
		vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "only-in-the-new-cluster")
		must.NoError(t, err)
		must.Nil(t, vol, must.Sprintf("%s kept a row the snapshot does not have", s.Name()))

		waitFor(t, 20*time.Second, "the root key on "+s.Name(), func() bool { return s.HasRootKey(keyID) })
		secrets, err := s.VolumeSecrets(structs.DefaultNamespace, "data")
		must.NoError(t, err)
		must.Eq(t, clusterSecret, secrets["token"], must.Sprintf("server %s opens the restored secret", s.Name()))
	}

	// The claim, as restored, and the leader's watcher driving it.
	vol, err := dst.Leader().State().CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, allocID)
	must.EqOp(t, "node-1", vol.WriteClaims[allocID].NodeID)
	var upd structs.NodeUpdateResponse
	must.NoError(t, call(t, dst.Followers()[0], "Node.UpdateStatus",
		&structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown}, &upd))
	waitFor(t, 30*time.Second, "the restored claim freed by the new leader's volume watcher", func() bool {
		vol, err := dst.Leader().State().CSIVolumeByID(nil, structs.DefaultNamespace, "data")
		return err == nil && vol != nil && !vol.InUse()
	})
}

// keyMaterial reads root key id's material from s's keystore file.
func keyMaterial(t *testing.T, s *servertest.TestServer, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(keyFile(s, id))
	must.NoError(t, err)
	var f struct{ Material []byte }
	must.NoError(t, json.Unmarshal(b, &f))
	must.SliceLen(t, structs.RootKeyMaterialSize, f.Material)
	return f.Material
}

// copyKeystore copies every key file of from into to, as an operator
// restores a backed up keystore/ before starting a server.
func copyKeystore(t *testing.T, from, to string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(to, 0o700))
	names, err := filepath.Glob(filepath.Join(from, "*.json"))
	must.NoError(t, err)
	must.SliceNotEmpty(t, names)
	for _, name := range names {
		b, err := os.ReadFile(name)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(filepath.Join(to, filepath.Base(name)), b, 0o600))
	}
}
