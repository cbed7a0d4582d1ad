package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

const otherNodeSecret = "5ec2e7e5-0000-4000-8000-000000000002"

// twoNodes registers node-1 (testNodeSecret) and node-2 (otherNodeSecret),
// both running hostpath, and alloc-1 on node-1.
func twoNodes(t *testing.T, s *Server) {
	t.Helper()
	for id, secret := range map[string]string{"node-1": testNodeSecret, "node-2": otherNodeSecret} {
		must.NoError(t, callAs(t, s, secret, "Node.Register", &structs.NodeRegisterRequest{
			Node: statetest.NodeWithPlugin(id, "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
	}
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{statetest.Alloc("alloc-1", "node-1")}})
	must.NoError(t, err)
}

func TestNodeIdentity_Register(t *testing.T) {
	s := testServer(t)
	node := statetest.Node("node-1")
	node.SecretHash = "chosen-by-the-caller"
	err := callAs(t, s, "", "Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "node secret")

	must.NoError(t, callAs(t, s, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, &structs.NodeUpdateResponse{}))
	stored, err := s.State().NodeByID(nil, "node-1")
	must.NoError(t, err)
	must.Eq(t, hashSecret(testNodeSecret), stored.SecretHash, must.Sprint("the servers hash the secret the client sent, whatever the node says"))

	// Again with its own secret: fine. With another: refused.
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, &structs.NodeUpdateResponse{}))
	err = callAs(t, s, otherNodeSecret, "Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "node node-1 is registered with another secret")

	// The hash never leaves the servers.
	var got structs.SingleNodeResponse
	must.NoError(t, callAs(t, s, "", "Node.Get", &structs.NodeSpecificRequest{NodeID: "node-1"}, &got))
	must.Eq(t, "", got.Node.SecretHash)
}

// TestNodeIdentity_ClientCalls: with ACLs off as on, a client's calls for
// a node need that node's secret.
func TestNodeIdentity_ClientCalls(t *testing.T) {
	s := testServer(t)
	twoNodes(t, s)
	calls := []struct {
		method string
		args   func() any
	}{
		{"Node.UpdateStatus", func() any { return &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady} }},
		{"Node.UpdateFingerprint", func() any { return &structs.NodeFingerprintRequest{NodeID: "node-1"} }},
		{"Node.GetClientAllocs", func() any { return &structs.NodeSpecificRequest{NodeID: "node-1"} }},
		{"Node.UpdateAlloc", func() any {
			return &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusRunning}}}
		}},
	}
	for _, c := range calls {
		t.Run(c.method, func(t *testing.T) {
			for _, token := range []string{"", otherNodeSecret} {
				err := callAs(t, s, token, c.method, c.args(), nil)
				must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprintf("token %q", token))
				must.StrContains(t, err.Error(), "node node-1's secret")
			}
			must.NoError(t, callAs(t, s, testNodeSecret, c.method, c.args(), nil))
		})
	}

	// A node unknown to the servers is NotFound, so its client registers.
	err := callAs(t, s, testNodeSecret, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "ghost", Status: structs.NodeStatusReady}, nil)
	must.ErrorIs(t, err, structs.ErrNotFound)

	// An operator's deregister needs no node secret with ACLs off.
	must.NoError(t, callAs(t, s, "", "Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{"node-2"}}, &structs.NodeUpdateResponse{}))
}

// TestNodeIdentity_LegacyNodeRegistersAgain: a node stored without a
// secret (before secrets existed) is NotFound to its client's calls, and
// its next registration sets its secret.
func TestNodeIdentity_LegacyNodeRegistersAgain(t *testing.T) {
	rec := &testlog.Recorder{}
	s := testServer(t, func(c *Config) { c.Logger = rec.Logger("solo") })
	_, _, err := raftApply[any](s, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("old")})
	must.NoError(t, err)
	err = callAs(t, s, testNodeSecret, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "old", Status: structs.NodeStatusReady}, nil)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrContains(t, err.Error(), "register again")
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("old")}, &structs.NodeUpdateResponse{}))
	must.StrContains(t, rec.String(), "node registered before node secrets takes the secret of this registration")
	must.StrContains(t, rec.String(), "node_id=old")
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "old", Status: structs.NodeStatusReady}, &structs.NodeUpdateResponse{}))
}

// TestNodeIdentity_LegacyNodeNeedsAClientCertificate: under TLS, a node
// stored without a secret is taken over only with a client (or server)
// certificate, whether or not the request says it was forwarded.
func TestNodeIdentity_LegacyNodeNeedsAClientCertificate(t *testing.T) {
	certs := tlsutiltest.NewPKI(t)
	s := testServer(t, func(c *Config) { c.TLS = certs.Cert(t, "server", tlsutil.RoleServer) })
	_, _, err := raftApply[any](s, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("old")})
	must.NoError(t, err)
	cases := []struct {
		name      string
		role      tlsutil.Role
		forwarded bool
		want      string // "" is accepted
	}{
		{"cli certificate", tlsutil.RoleCLI, false, "only a client (or server) certificate registers a node"},
		{"cli certificate, says forwarded", tlsutil.RoleCLI, true, "certificate"},
		{"client certificate", tlsutil.RoleClient, false, ""},
		// An agent that runs a server and a client presents its server's.
		{"server certificate", tlsutil.RoleServer, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &structs.NodeRegisterRequest{Node: statetest.Node("old")}
			if tc.forwarded {
				req.SetForwarded()
			}
			err := NodeSession(t, s.RPCAddr(), certs.Cert(t, tc.name, tc.role), "caller", "Node.Register", testNodeSecret, req)
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, structs.ErrPermissionDenied)
			must.StrContains(t, err.Error(), tc.want)
			stored, err := s.State().NodeByID(nil, "old")
			must.NoError(t, err)
			must.Eq(t, "", stored.SecretHash)
		})
	}
}

// TestNodeIdentity_VolumeSecrets: a volume's secrets go to the node of an
// alloc whose group asks for the volume, on the node's own secret, when
// its client confirms the claim (Publish), and to no one else; a claim
// answers no secrets, and a node takes no claim of its own.
func TestNodeIdentity_VolumeSecrets(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	registerSecretVolumes(t, s, mgmt, structs.DefaultNamespace, "data")
	placeAllocs(t, s, volumeAlloc("alloc-data", "node-1", structs.DefaultNamespace, 0, "data", false))
	claim := func() *structs.CSIVolumeClaimRequest { return takeClaim("data", "default", "alloc-data", "node-1") }
	want := structs.CSISecrets{"token": "secret-of-data"}

	// Another node cannot claim for an alloc that is not on it, nor the
	// alloc's own node take a claim.
	must.ErrorIs(t, callAs(t, s, otherNodeSecret, "CSIVolume.Claim", claim(), nil), structs.ErrPermissionDenied)
	odd := claim()
	odd.NodeID = "node-2"
	must.ErrorIs(t, callAs(t, s, otherNodeSecret, "CSIVolume.Claim", odd, nil), structs.ErrPermissionDenied)
	err := callAs(t, s, testNodeSecret, "CSIVolume.Claim", claim(), nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "node node-1 takes no claim of its own")

	// An operator (csi-mount-volume) claims, without the secrets.
	var resp structs.CSIVolumeClaimResponse
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Claim", claim(), &resp))
	must.MapEmpty(t, resp.NodeSecrets)

	publish := func() *structs.CSIVolumePublishRequest {
		return &structs.CSIVolumePublishRequest{VolumeID: "data", AllocationID: "alloc-data", NodeID: "node-1"}
	}
	must.ErrorIs(t, callAs(t, s, otherNodeSecret, "CSIVolume.Publish", publish(), nil), structs.ErrPermissionDenied)
	resp = structs.CSIVolumeClaimResponse{}
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Publish", publish(), &resp))
	must.MapEmpty(t, resp.NodeSecrets)
	must.NoError(t, callAs(t, s, testNodeSecret, "CSIVolume.Publish", publish(), &resp))
	must.Eq(t, want, resp.NodeSecrets)

	// The node reads the volume its alloc asks for (sanitized); another
	// node, or an unknown secret, does not.
	var got structs.CSIVolumeGetResponse
	must.NoError(t, callAs(t, s, testNodeSecret, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &got))
	must.MapEmpty(t, got.Volume.Secrets)
	must.ErrorIs(t, callAs(t, s, otherNodeSecret, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, nil), structs.ErrPermissionDenied)
	must.ErrorIs(t, callAs(t, s, "not-a-node", "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, nil), structs.ErrPermissionDenied)
}

// TestNodeIdentity_Operators: with ACLs on, node write acts for any node,
// node read does not.
func TestNodeIdentity_Operators(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	writer := makeToken(t, s, mgmt, "node-writer", "node {\n  policy = \"write\"\n}\n")
	reader := makeToken(t, s, mgmt, "readonly", readOnlyRules)
	status := func() *structs.NodeUpdateStatusRequest {
		return &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}
	}
	must.ErrorIs(t, callAs(t, s, reader, "Node.UpdateStatus", status(), nil), structs.ErrPermissionDenied)
	must.NoError(t, callAs(t, s, writer, "Node.UpdateStatus", status(), &structs.NodeUpdateResponse{}))
	must.ErrorIs(t, callAs(t, s, "", "Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{"node-2"}}, nil),
		structs.ErrPermissionDenied)
	// A client may deregister its own node.
	must.NoError(t, callAs(t, s, otherNodeSecret, "Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{"node-2"}},
		&structs.NodeUpdateResponse{}))
}

// sessionAs opens a session to s as a client agent does, answering pings
// as name, and sends a node call on it with token.
func sessionAs(t *testing.T, s *Server, name, method, token string, args any) error {
	t.Helper()
	return NodeSession(t, s.RPCAddr(), nil, name, method, token, args)
}

// TestNodeIdentity_SessionNotHijacked: a call for a node without its
// secret does not make the caller's session the node's: the servers'
// calls to the node (with volume secrets in them) still reach its client.
func TestNodeIdentity_SessionNotHijacked(t *testing.T) {
	s := testServer(t)
	must.NoError(t, sessionAs(t, s, "genuine", "Node.Register", testNodeSecret, &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}))
	err := sessionAs(t, s, "impostor", "Node.UpdateStatus", otherNodeSecret,
		&structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	err = sessionAs(t, s, "impostor", "Node.Register", otherNodeSecret, &structs.NodeRegisterRequest{Node: statetest.Node("node-1")})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)

	var pong structs.ClientPingResponse
	must.NoError(t, rpcCall(t, s, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: "node-1"}, &pong))
	must.Eq(t, "genuine", pong.NodeID)
}

// TestNodeIdentity_NodeWriteDoesNotTakeTheSession: a token with node write
// may update a node, but its session does not become the node's: the
// servers' calls to the node (controller and detach calls carry volume
// secrets) still reach the node's own client.
func TestNodeIdentity_NodeWriteDoesNotTakeTheSession(t *testing.T) {
	s, mgmt := aclServer(t)
	writer := makeToken(t, s, mgmt, "node-writer", "node {\n  policy = \"write\"\n}\n")
	must.NoError(t, sessionAs(t, s, "genuine", "Node.Register", testNodeSecret, &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}))

	calls := []struct {
		method string
		args   any
	}{
		{"Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}},
		{"Node.UpdateFingerprint", &structs.NodeFingerprintRequest{NodeID: "node-1"}},
	}
	for _, c := range calls {
		t.Run(c.method, func(t *testing.T) {
			must.NoError(t, sessionAs(t, s, "impostor", c.method, writer, c.args), must.Sprint("an operator may act for the node"))
			var pong structs.ClientPingResponse
			must.NoError(t, callAs(t, s, mgmt, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: "node-1"}, &pong))
			must.Eq(t, "genuine", pong.NodeID)
		})
	}

	// The node's own secret still moves the session (a client reconnects).
	must.NoError(t, sessionAs(t, s, "restarted", "Node.UpdateStatus", testNodeSecret,
		&structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}))
	var pong structs.ClientPingResponse
	must.NoError(t, callAs(t, s, mgmt, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: "node-1"}, &pong))
	must.Eq(t, "restarted", pong.NodeID)
}

// TestNodeIdentity_ClientAllocsOfItsOwnNode: with ACLs on, a node's secret
// reads its own node's allocations and no other's; an operator with node
// write reads any node's.
func TestNodeIdentity_ClientAllocsOfItsOwnNode(t *testing.T) {
	s, mgmt := aclServer(t)
	twoNodes(t, s)
	writer := makeToken(t, s, mgmt, "node-writer", "node {\n  policy = \"write\"\n}\n")
	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"its own node's secret", testNodeSecret, nil},
		{"another node's secret", otherNodeSecret, structs.ErrPermissionDenied},
		{"no token", "", structs.ErrPermissionDenied},
		{"node write", writer, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.NodeClientAllocsResponse
			err := callAs(t, s, tc.token, "Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: "node-1"}, &resp)
			if tc.want != nil {
				must.ErrorIs(t, err, tc.want)
				must.Nil(t, resp.Allocs)
				return
			}
			must.NoError(t, err)
			must.SliceLen(t, 1, resp.Allocs)
			must.Eq(t, "alloc-1", resp.Allocs[0].ID)
		})
	}
}
