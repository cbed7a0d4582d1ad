package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// TestNodeIdentity_Cluster_NodeWriteDoesNotTakeTheSession: through a
// follower, a node call with a node-write token succeeds on the leader,
// but the follower keeps the session of the node's own client for the
// servers' calls to the node.
func TestNodeIdentity_Cluster_NodeWriteDoesNotTakeTheSession(t *testing.T) {
	c, mgmt, writer := aclCluster(t, "node-writer", "node {\n  policy = \"write\"\n}\n")
	follower := c.Followers()[0]

	must.NoError(t, server.NodeSession(t, follower.RPCAddr(), nil, "genuine", "Node.Register", testNodeSecret,
		&structs.NodeRegisterRequest{Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}))
	must.NoError(t, server.NodeSession(t, follower.RPCAddr(), nil, "impostor", "Node.UpdateStatus", writer,
		&structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}))

	// The follower knows the management token once it has replicated it.
	var pong structs.ClientPingResponse
	waitFor(t, 20*time.Second, "the follower to take the management token", func() bool {
		err := call(t, follower, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: "node-1",
			QueryOptions: structs.QueryOptions{AuthToken: mgmt}}, &pong)
		must.True(t, err == nil || errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("ping: %v", err))
		return err == nil
	})
	must.Eq(t, "genuine", pong.NodeID)
}

// TestNodeIdentity_Cluster_RegisterThroughAFollower: under TLS only a
// client certificate registers a node, through a follower too (the leader
// sees the follower's server certificate).
func TestNodeIdentity_Cluster_RegisterThroughAFollower(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	c := servertest.Cluster(t, 3, servertest.WithTLS(t, pki, gossipKey(t)))
	follower := c.Followers()[0]
	cases := []struct {
		name string
		role tlsutil.Role
		want error
	}{
		{"cli certificate", tlsutil.RoleCLI, structs.ErrPermissionDenied},
		{"client certificate", tlsutil.RoleClient, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := server.NodeSession(t, follower.RPCAddr(), pki.Cert(t, string(tc.role), tc.role), string(tc.role), "Node.Register",
				testNodeSecret, &structs.NodeRegisterRequest{Node: statetest.Node("node-" + string(tc.role))})
			if tc.want == nil {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, tc.want)
			must.StrContains(t, err.Error(), "only a client (or server) certificate registers a node")
		})
	}
}
