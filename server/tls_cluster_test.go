package server_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

func gossipKey(t *testing.T) []byte {
	t.Helper()
	key := make([]byte, server.GossipKeySize)
	_, err := rand.Read(key)
	must.NoError(t, err)
	return key
}

// recorder keeps the log lines of the servers a test starts, printed if
// it fails.
func recorder(t *testing.T) *testlog.Recorder {
	rec := &testlog.Recorder{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(rec.String())
		}
	})
	return rec
}

func TestTLS_Cluster_ElectsAndForwards(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	c := servertest.Cluster(t, 3, servertest.WithTLS(t, pki, gossipKey(t)))
	follower := c.Followers()[0]

	// Writes through a follower are forwarded to the leader over TLS.
	registerPluginNode(t, follower, "node-1", "hostpath")
	index := registerVolume(t, follower, "data", "hostpath")
	for _, s := range c.Running() {
		must.NotNil(t, staleGet(t, s, "data", index), must.Sprintf("server %s has no volume", s.Name()))
	}
	var peers []string
	must.NoError(t, call(t, follower, "Status.Peers", &structs.GenericRequest{}, &peers))
	must.SliceLen(t, 3, peers)

	cases := []struct {
		name string
		tls  *tlsutil.Config
		ok   bool
	}{
		{"client certificate", pki.Cert(t, "client", tlsutil.RoleClient), true},
		{"plain text", nil, false},
		{"certificate of another CA", tlsutiltest.NewPKI(t).Cert(t, "stranger", tlsutil.RoleClient), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var leader string
			err := server.TLSPool(t, tc.tls).Call(ctx, follower.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leader)
			if !tc.ok {
				must.ErrorIs(t, err, structs.ErrUnavailable)
				return
			}
			must.NoError(t, err)
			must.Eq(t, c.Leader().RPCAddr(), leader)
		})
	}
}

// TestTLS_ClientCertificateCannotJoinRaft: a member of gossip (it has the
// gossip key) whose certificate is a client's is never added to raft, and
// its raft connections are refused.
func TestTLS_ClientCertificateCannotJoinRaft(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	key := gossipKey(t)
	rec := recorder(t)
	c := servertest.Cluster(t, 1, servertest.WithTLS(t, pki, key), func(cfg *server.Config) {
		cfg.Logger = rec.Logger("server-0")
	})
	s0 := c.Servers[0]

	rogueCfg := servertest.TestConfig(t, "rogue", 1)
	rogueCfg.TLS = pki.Cert(t, "rogue", tlsutil.RoleClient)
	rogueCfg.EncryptKey = key
	rogueCfg.Join = []string{s0.SerfAddr()}
	rogueCfg.Logger = rec.Logger("rogue")
	rogue, err := server.New(rogueCfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = rogue.Shutdown() })

	logs := func(want string) func() bool {
		return func() bool { return strings.Contains(rec.String(), want) }
	}
	waitFor(t, 30*time.Second, "the leader to refuse the rogue a place in raft",
		logs("server-0.server: not adding gossip member to raft: server=server-0 member=rogue"))
	waitFor(t, 30*time.Second, "the rogue's raft connection to be refused",
		logs("server-0.rpc_mux: refusing connection: certificate role not allowed for this connection type: remote_addr=127.0.0.1:"))
	must.StrContains(t, rec.String(), "type=raft role=client required_role=server")

	var peers []string
	must.NoError(t, call(t, s0, "Status.Peers", &structs.GenericRequest{}, &peers))
	must.Eq(t, []string{s0.RPCAddr()}, peers)
	var members structs.ServerMembersResponse
	must.NoError(t, call(t, s0, "Status.Members", &structs.GenericRequest{}, &members))
	must.SliceLen(t, 2, members.Members, must.Sprint("the rogue is in gossip, only not in raft"))
}

func TestGossip_MemberWithoutKeyCannotJoin(t *testing.T) {
	key := gossipKey(t)
	rec := recorder(t)
	c := servertest.Cluster(t, 1, func(cfg *server.Config) { cfg.EncryptKey = key })
	s0 := c.Servers[0]

	start := func(name string, key []byte) *server.Server {
		cfg := servertest.TestConfig(t, name, 1)
		cfg.EncryptKey = key
		cfg.Join = []string{s0.SerfAddr()}
		cfg.Logger = rec.Logger(name)
		s, err := server.New(cfg)
		must.NoError(t, err)
		t.Cleanup(func() { _ = s.Shutdown() })
		return s
	}
	start("other-key", gossipKey(t))
	start("no-key", nil)
	for _, name := range []string{"other-key", "no-key"} {
		waitFor(t, 30*time.Second, name+" to fail to join",
			func() bool {
				return strings.Contains(rec.String(), name+".server: could not join servers yet; retrying: server="+name)
			})
	}
	friend := start("friend", key)
	members := func() []string {
		var resp structs.ServerMembersResponse
		must.NoError(t, call(t, s0, "Status.Members", &structs.GenericRequest{}, &resp))
		var names []string
		for _, m := range resp.Members {
			names = append(names, m.Name)
		}
		return names
	}
	waitFor(t, 30*time.Second, "the member with the key to join", func() bool { return len(members()) >= 2 })
	must.Eq(t, []string{friend.Name(), s0.Name()}, members())
}

// TestTLS_Cluster_RelayToAClientOnAnotherServer: over TLS, with ACLs off
// and verify_server_hostname on or off, the leader's controller call
// reaches a client whose session is on a follower: the follower's relay
// check passes on the leader's server certificate. The client's own
// certificate cannot call the relay.
func TestTLS_Cluster_RelayToAClientOnAnotherServer(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(map[bool]string{true: "verify_server_hostname", false: "no verify_server_hostname"}[verify], func(t *testing.T) {
			pki := tlsutiltest.NewPKI(t)
			c := servertest.Cluster(t, 3, servertest.WithTLS(t, pki, gossipKey(t)),
				func(cfg *server.Config) { cfg.TLS.VerifyServerHostname = verify })
			leader := c.Leader()
			follower := c.Followers()[0]
			clientCert := pki.Cert(t, "client", tlsutil.RoleClient)
			client := &controllerClient{}
			server.ConnectTLSClient(t, follower.RPCAddr(), clientCert, client)

			must.NoError(t, call(t, leader, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
				Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &structs.CSIVolumeRegisterResponse{}))
			must.SliceNotEmpty(t, client.seen(), must.Sprint("the validate call reached the client through the follower"))

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := server.TLSPool(t, clientCert).Call(ctx, follower.RPCAddr(), "ClientCSI.ControllerValidateVolume",
				&structs.ClientCSIControllerValidateVolumeRequest{NodeID: "node-1"}, &structs.ClientCSIControllerValidateVolumeResponse{})
			must.ErrorIs(t, err, structs.ErrPermissionDenied)
		})
	}
}
