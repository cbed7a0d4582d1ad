package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// snapshotAs saves a snapshot file through s with token.
func snapshotAs(t *testing.T, s *Server, token string) []byte {
	t.Helper()
	var save structs.SnapshotSaveResponse
	must.NoError(t, callAs(t, s, token, "Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &save))
	var file []byte
	for {
		var chunk structs.SnapshotReadResponse
		must.NoError(t, callAs(t, s, token, "Operator.SnapshotRead",
			&structs.SnapshotReadRequest{Handle: save.Handle, Offset: int64(len(file))}, &chunk))
		file = append(file, chunk.Data...)
		if chunk.EOF {
			return file
		}
	}
}

// restoreAs restores file through s with token, in one chunk.
func restoreAs(t *testing.T, s *Server, token string, file []byte) (*structs.SnapshotRestoreResponse, error) {
	t.Helper()
	var up structs.SnapshotUploadResponse
	if err := callAs(t, s, token, "Operator.SnapshotUpload", &structs.SnapshotUploadRequest{Data: file}, &up); err != nil {
		return nil, err
	}
	var resp structs.SnapshotRestoreResponse
	err := callAs(t, s, token, "Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Handle: up.Handle}, &resp)
	return &resp, err
}

func waitLeaderToken(t *testing.T, s *Server) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.leaderSecret.Load() == nil {
		must.True(t, time.Now().Before(deadline), must.Sprint("the leader never made its token"))
		time.Sleep(10 * time.Millisecond)
	}
	return *s.leaderSecret.Load()
}

// TestOperatorSnapshot_Restore_ReassertsTheLeader: after a restore the
// leader's own work runs on the restored state, as after an election: its
// token is one the restored state knows (the snapshot's is another
// leader's), a restored ready node, whose client does not heartbeat here,
// is marked down after its TTL, and the root key no server here holds is
// told. The cluster's ACL tokens are the snapshot's.
func TestOperatorSnapshot_Restore_ReassertsTheLeader(t *testing.T) {
	src, srcMgmt := aclServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	waitLeaderToken(t, src)
	must.NoError(t, callAs(t, src, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
	var keys []*structs.RootKeyMeta
	deadline := time.Now().Add(20 * time.Second)
	for len(keys) == 0 {
		must.True(t, time.Now().Before(deadline), must.Sprint("the leader never made its first root key"))
		time.Sleep(10 * time.Millisecond)
		var err error
		keys, err = src.State().RootKeyMetas(nil)
		must.NoError(t, err)
	}
	file := snapshotAs(t, src, srcMgmt)

	dst, dstMgmt := aclServer(t, func(c *Config) { c.HeartbeatTTL = time.Second })
	dstSecret := waitLeaderToken(t, dst)
	resp, err := restoreAs(t, dst, dstMgmt, file)
	must.NoError(t, err)
	must.Eq(t, []string{keys[0].KeyID}, resp.MissingRootKeys, must.Sprint("no server here holds the snapshot's root key"))

	secret := *dst.leaderSecret.Load()
	must.NotEq(t, dstSecret, secret, must.Sprint("the leader made a new token after the restore"))
	must.True(t, dst.isManagementToken(secret), must.Sprint("the leader's token is one the restored state knows"))
	must.True(t, dst.isManagementToken(srcMgmt), must.Sprint("the snapshot's management token works"))
	must.False(t, dst.isManagementToken(dstMgmt), must.Sprint("the replaced state's token is gone"))

	node, err := dst.State().NodeByID(nil, "node-1")
	must.NoError(t, err)
	must.EqOp(t, structs.NodeStatusReady, node.Status)
	deadline = time.Now().Add(30 * time.Second)
	for node.Status != structs.NodeStatusDown {
		must.True(t, time.Now().Before(deadline), must.Sprint("the restored node was never marked down: no heartbeat timer"))
		time.Sleep(50 * time.Millisecond)
		node, err = dst.State().NodeByID(nil, "node-1")
		must.NoError(t, err)
	}
}

// TestOperatorSnapshot_StagedFileExpires: a staged file nobody reads is
// removed after the idle period; reading it then is NotFound.
func TestOperatorSnapshot_StagedFileExpires(t *testing.T) {
	s := testServer(t)
	s.snapshots.mu.Lock()
	s.snapshots.idle = 50 * time.Millisecond
	s.snapshots.mu.Unlock()
	var save structs.SnapshotSaveResponse
	must.NoError(t, rpcCall(t, s, "Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &save))
	must.EqOp(t, 1, s.stagedCount())
	deadline := time.Now().Add(20 * time.Second)
	for s.stagedCount() != 0 {
		must.True(t, time.Now().Before(deadline), must.Sprint("the staged file never expired"))
		time.Sleep(10 * time.Millisecond)
	}
	err := rpcCall(t, s, "Operator.SnapshotRead", &structs.SnapshotReadRequest{Handle: save.Handle}, &structs.SnapshotReadResponse{})
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrContains(t, err.Error(), "start again")
}

// TestOperatorSnapshot_Save_AfterAMembershipChange: raft refuses to
// snapshot while its latest configuration entry is newer than the last
// command the FSM applied (a server joined an idle cluster); the save
// moves the FSM past it first.
func TestOperatorSnapshot_Save_AfterAMembershipChange(t *testing.T) {
	s := testServer(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		keys, err := s.State().RootKeyMetas(nil)
		must.NoError(t, err)
		if len(keys) > 0 {
			break
		}
		must.True(t, time.Now().Before(deadline), must.Sprint("the leader never made its first root key"))
		time.Sleep(10 * time.Millisecond)
	}
	applied := s.fsm.AppliedIndex()
	add := s.raft.AddNonvoter("joiner", "127.0.0.1:1", 0, 0)
	must.NoError(t, add.Error())
	must.Greater(t, applied, add.Index(), must.Sprint("the configuration entry is the newest"))

	var save structs.SnapshotSaveResponse
	must.NoError(t, rpcCall(t, s, "Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &save))
	must.Greater(t, add.Index(), save.Index)
}
