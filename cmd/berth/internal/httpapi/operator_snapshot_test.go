package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// putSnapshot sends body to PUT /v1/operator/snapshot with token and
// returns the status and the error body, if any.
func putSnapshot(t *testing.T, srv *httptest.Server, token string, body []byte) (int, errorBody) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/v1/operator/snapshot", bytes.NewReader(body))
	must.NoError(t, err)
	if token != "" {
		req.Header.Set(headerToken, token)
	}
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	var e errorBody
	if resp.StatusCode != http.StatusOK {
		must.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	}
	return resp.StatusCode, e
}

// TestOperatorSnapshot_RealServer_ACLs: with ACLs on only a management
// token saves or restores (403 for anonymous and a token with operator
// write); the file comes with its length and index and checks; a body that
// is not a whole snapshot file is a 400 naming what is wrong; the saved
// file restores.
func TestOperatorSnapshot_RealServer_ACLs(t *testing.T) {
	anon, srv := newACLServer(t)
	boot, _, err := anon.ACLBootstrap()
	must.NoError(t, err)
	mgmt := anon.WithToken(boot.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "ops", Rules: "operator {\n  policy = \"write\"\n}\n"})
	must.NoError(t, err)
	made, _, err := mgmt.ACLTokens().Create(&structs.ACLToken{Name: "ops", Policies: []string{"ops"}})
	must.NoError(t, err)
	ops := anon.WithToken(made.SecretID)

	for name, c := range map[string]*api.Client{"anonymous": anon, "operator write": ops} {
		_, _, err := c.Operator().SnapshotSave()
		must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint(name))
		var ae *api.Error
		must.ErrorAs[*api.Error](t, err, &ae)
		must.EqOp(t, http.StatusForbidden, ae.StatusCode)
		must.StrContains(t, ae.Message, "management token")
	}

	// The file, with its headers, straight off the wire.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/operator/snapshot", nil)
	must.NoError(t, err)
	req.Header.Set(headerToken, boot.SecretID)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	file, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	must.NoError(t, err)
	must.EqOp(t, http.StatusOK, resp.StatusCode)
	must.EqOp(t, "application/gzip", resp.Header.Get("Content-Type"))
	must.EqOp(t, strconv.Itoa(len(file)), resp.Header.Get("Content-Length"))
	index, err := strconv.ParseUint(resp.Header.Get(headerIndex), 10, 64)
	must.NoError(t, err)
	meta, err := snapshotfile.Read(bytes.NewReader(file), io.Discard)
	must.NoError(t, err)
	must.EqOp(t, index, meta.Index)

	// Restores: refused for want of a token, before anything is staged;
	// refused for a bad body.
	for name, token := range map[string]string{"anonymous": "", "operator write": made.SecretID} {
		status, e := putSnapshot(t, srv, token, file)
		must.EqOp(t, http.StatusForbidden, status, must.Sprint(name))
		must.EqOp(t, structs.CodePermissionDenied, e.Code)
	}
	bad := []struct {
		name string
		body []byte
		msg  string
	}{
		{"empty", nil, "request body is empty"},
		{"json", []byte(`{"Jobs": []}`), "not a berth snapshot file (it is not gzip data)"},
		{"truncated", file[:len(file)/2], "cut short or damaged"},
	}
	for _, tc := range bad {
		status, e := putSnapshot(t, srv, boot.SecretID, tc.body)
		must.EqOp(t, http.StatusBadRequest, status, must.Sprintf("%s: %v", tc.name, e))
		must.EqOp(t, structs.CodeBadRequest, e.Code)
		must.StrContains(t, e.Message, tc.msg)
	}

	restored, wm, err := mgmt.Operator().SnapshotRestore(bytes.NewReader(file))
	must.NoError(t, err)
	must.EqOp(t, meta.Index, restored.Meta.Index)
	must.Greater(t, meta.Index, wm.LastIndex)
	rows := map[string]int{}
	for _, c := range restored.Tables {
		rows[c.Table] = c.Rows
	}
	must.EqOp(t, 3, rows["acl_tokens"], must.Sprint("the bootstrap token, the ops token and the leader's own"))
	must.EqOp(t, 1, rows["acl_policies"])
	// The snapshot was this cluster's: the management token still works.
	_, _, err = mgmt.ACLTokens().List(nil)
	must.NoError(t, err)
}

// TestOperatorSnapshot_RealCluster_ThroughFollowers: the HTTP API of a
// follower saves and restores (the servers forward each chunk to the
// leader, where the file is staged), and what it restores is on every
// server.
func TestOperatorSnapshot_RealCluster_ThroughFollowers(t *testing.T) {
	c := servertest.Cluster(t, 3)
	followers := c.Followers()
	serve := func(s *servertest.TestServer) *api.Client {
		srv := httptest.NewServer(New(s.Server, testLogger(t)))
		t.Cleanup(srv.Close)
		cl, err := api.NewClient(api.Config{Address: srv.URL})
		must.NoError(t, err)
		return cl
	}
	first, second := serve(followers[0]), serve(followers[1])

	register := func(id string) {
		t.Helper()
		var resp structs.CSIVolumeRegisterResponse
		must.NoError(t, c.Leader().RPC(t.Context(), "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
			Volumes: []*structs.CSIVolume{statetest.Volume(id, "hostpath")}}, &resp))
	}
	var nresp structs.NodeUpdateResponse
	must.NoError(t, c.Leader().RPC(t.Context(), "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("node-1", "hostpath", false, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: "5ec2e7e5-0000-4000-8000-0000000000aa"}}, &nresp))
	register("kept")

	body, qm, err := first.Operator().SnapshotSave()
	must.NoError(t, err)
	file, err := io.ReadAll(body)
	_ = body.Close()
	must.NoError(t, err)
	must.Positive(t, qm.LastIndex)

	register("dropped")
	restored, _, err := second.Operator().SnapshotRestore(bytes.NewReader(file))
	must.NoError(t, err)
	must.EqOp(t, qm.LastIndex, restored.Meta.Index)

	for _, s := range c.Running() {
		waitGone(t, s, "dropped")
		vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "kept")
		must.NoError(t, err)
		must.NotNil(t, vol, must.Sprintf("server %s lost a volume the snapshot has", s.Name()))
	}
	_, _, err = second.Operator().SnapshotRestore(strings.NewReader("not a snapshot"))
	must.ErrorIs(t, err, structs.ErrBadRequest)
}

// waitGone waits until server s's state has no volume id: the restore
// reached it.
func waitGone(t *testing.T, s *servertest.TestServer, id string) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		return vol == nil
	}), wait.Timeout(20*time.Second), wait.Gap(20*time.Millisecond)),
		must.Sprintf("server %s still has volume %s: the restore never reached it", s.Name(), id))
}
