package server

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// laxCert is certs.Cert with verify_server_hostname off.
func laxCert(t *testing.T, certs *tlsutiltest.PKI, name string, role tlsutil.Role) *tlsutil.Config {
	t.Helper()
	cfg := certs.Cert(t, name, role)
	cfg.VerifyServerHostname = false
	return cfg
}

// appendEntries sends s one raft AppendEntries of term over a raft
// connection dialed with cfg's certificate, as another server would.
func appendEntries(t *testing.T, s *Server, cfg *tlsutil.Config, term uint64) (*raft.AppendEntriesResponse, error) {
	t.Helper()
	conf, err := tlsutil.NewConfigurator(*cfg)
	must.NoError(t, err)
	layer := newRaftLayer(t.Context(), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, "", conf.OutgoingRPC)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 1, Timeout: 5 * time.Second, Logger: testlog.Logger(t, "dialer"),
	})
	defer trans.Close()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("dialer"), Addr: []byte("127.0.0.1:1")},
		Term:      term,
	}
	var resp raft.AppendEntriesResponse
	err = trans.AppendEntries(raft.ServerID(s.id), raft.ServerAddress(s.RPCAddr()), req, &resp)
	return &resp, err
}

// TestTLS_ServerRoleWhateverVerifyServerHostname: under tls.rpc only a
// server certificate may act as a server (raft, forwarding, server-only
// endpoints and the node session lookup, root keys, a place in raft), with verify_server_hostname on
// or off: a client certificate is of the same CA and must not pass for one.
func TestTLS_ServerRoleWhateverVerifyServerHostname(t *testing.T) {
	for _, verify := range []bool{true, false} {
		t.Run(map[bool]string{true: "verify_server_hostname", false: "no verify_server_hostname"}[verify], func(t *testing.T) {
			certs := tlsutiltest.NewPKI(t)
			own := certs.Cert(t, "server", tlsutil.RoleServer)
			own.VerifyServerHostname = verify
			s := testServer(t, func(c *Config) { c.TLS = own })
			client := laxCert(t, certs, "client", tlsutil.RoleClient)
			peer := laxCert(t, certs, "peer", tlsutil.RoleServer)

			t.Run("raft from a client certificate is refused", func(t *testing.T) {
				term := s.raft.CurrentTerm()
				_, err := appendEntries(t, s, client, term+100)
				must.Error(t, err)
				must.EqOp(t, term, s.raft.CurrentTerm(), must.Sprint("a client certificate moved raft's term"))
				must.True(t, s.IsLeader())
			})
			t.Run("raft from a server certificate is served", func(t *testing.T) {
				resp, err := appendEntries(t, s, peer, 0) // a stale term: answered, and ignored
				must.NoError(t, err)
				must.False(t, resp.Success)
				must.EqOp(t, s.raft.CurrentTerm(), resp.Term)
			})

			var key structs.KeyringGetKeyResponse
			keyID, err := s.activeRootKey()
			must.NoError(t, err)
			calls := []struct {
				name   string
				method string
				args   any
				reply  any
			}{
				{"forwarded request", "Status.Leader",
					&structs.GenericRequest{QueryOptions: structs.QueryOptions{Forwarded: true}}, new(string)},
				{"client ping relay", "ClientStatus.Ping",
					&structs.NodeSpecificRequest{NodeID: "node-1"}, &structs.ClientPingResponse{}},
				{"controller delete relay", "ClientCSI.ControllerDeleteVolume",
					&structs.ClientCSIControllerDeleteVolumeRequest{NodeID: "node-1"}, &structs.ClientCSIControllerDeleteVolumeResponse{}},
				{"root key", "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: keyID}, &key},
				{"node session lookup", "Status.HasNodeConn", &structs.NodeSpecificRequest{NodeID: "node-1"}, new(bool)},
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					err := TLSPool(t, client).Call(ctx, s.RPCAddr(), c.method, c.args, c.reply)
					must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("from a client certificate"))

					err = TLSPool(t, peer).Call(ctx, s.RPCAddr(), c.method, c.args, c.reply)
					if err != nil {
						// The relays find no session for node-1: past the check.
						must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("from a server certificate"))
					}
				})
			}

			t.Run("a member must show a server certificate to join raft", func(t *testing.T) {
				for _, tc := range []struct {
					name string
					cert *tlsutil.Config
					ok   bool
				}{
					{"client certificate", laxCert(t, certs, "member-client", tlsutil.RoleClient), false},
					{"server certificate", laxCert(t, certs, "member-server", tlsutil.RoleServer), true},
				} {
					addr := serveTLS(t, tc.cert)
					err := s.verifyMember(t.Context(), serverMember{Name: "member", ID: "member-id", RPCAddr: addr})
					if tc.ok {
						must.NoError(t, err, must.Sprint(tc.name))
					} else {
						must.ErrorContains(t, err, "did not present a server certificate", must.Sprint(tc.name))
					}
				}
			})
		})
	}
}

// serveTLS serves TLS RPC connections with cfg's certificate on 127.0.0.1
// (closing each once its handshake is done) and returns the address.
func serveTLS(t *testing.T, cfg *tlsutil.Config) string {
	t.Helper()
	conf, err := tlsutil.NewConfigurator(*cfg)
	must.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	mux := rpc.NewMux(testlog.Logger(t, "member"), l, rpc.WithMuxTLS(conf.IncomingRPC))
	mux.Handle(rpc.TypeRPC, func(c net.Conn) { _ = c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mux.Serve(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l.Addr().String()
}

// TestServer_PrepareReloadTLS: prepared certificates are not in use until
// commit; a failed prepare changes nothing.
func TestServer_PrepareReloadTLS(t *testing.T) {
	certs := tlsutiltest.NewPKI(t)
	cfg := certs.Cert(t, "server", tlsutil.RoleServer)
	s := testServer(t, func(c *Config) { c.TLS = cfg })
	serial := func() string { return s.tls.Certificate().SerialNumber.String() }
	first := serial()

	certs.Rewrite(t, cfg, tlsutil.RoleServer)
	commit, err := s.PrepareReloadTLS()
	must.NoError(t, err)
	must.EqOp(t, first, serial(), must.Sprint("prepared, not yet committed"))
	commit()
	second := serial()
	must.NotEq(t, first, second)

	certs.Rewrite(t, cfg, tlsutil.RoleServer)
	must.NoError(t, os.WriteFile(cfg.KeyFile, []byte("garbage"), 0o600))
	_, err = s.PrepareReloadTLS()
	must.ErrorContains(t, err, cfg.KeyFile)
	must.EqOp(t, second, serial())
}
