package rpc

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// startTLSServer serves "Test" over TLS only with a server certificate of
// pki, raft connections only from servers.
func startTLSServer(t *testing.T, pki *tlsutiltest.PKI, raft func(net.Conn)) (*testServer, *tlsutil.Configurator, func() string) {
	t.Helper()
	logger, rec := recordedLogger(t)
	conf := pki.Configurator(t, "server", tlsutil.RoleServer)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger:   logger,
		mux:      []MuxOption{WithMuxTLS(conf.IncomingRPC), WithRequiredRole(TypeRaft, tlsutil.RoleServer)},
		server:   []ServerOption{WithForwardedRole(tlsutil.RoleServer)},
		handlers: map[byte]func(net.Conn){TypeRaft: raft},
	})
	return ts, conf, rec.String
}

func TestTLS_Call(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	ts, _, _ := startTLSServer(t, pki, func(c net.Conn) { c.Close() })
	client := pki.Configurator(t, "client", tlsutil.RoleClient)

	t.Run("one connection", func(t *testing.T) {
		conn, err := Dial(testCtx(t), ts.addr, TypeRPC, WithDialTLS(client.OutgoingRPC))
		must.NoError(t, err)
		defer conn.Close()
		_, isTLS := conn.(*tls.Conn)
		must.True(t, isTLS)
		var reply PeerReply
		must.NoError(t, CallConn(testCtx(t), conn, "Test.Peer", &EchoArgs{}, &reply))
		must.True(t, reply.Found)
		must.Eq(t, Peer{Addr: conn.LocalAddr().String(), Role: tlsutil.RoleClient, TLS: true}, reply.Peer)
	})
	t.Run("pool session and a call back over it", func(t *testing.T) {
		back := NewServer(nil)
		must.NoError(t, back.Register("Test", &testService{}))
		t.Cleanup(back.Shutdown)
		p := newPool(t, WithPoolTLS(client.OutgoingRPC), WithStreamServer(back))

		var reply PeerReply
		must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Peer", &EchoArgs{}, &reply))
		must.Eq(t, tlsutil.RoleClient, reply.Peer.Role)
		must.True(t, reply.Peer.TLS)

		// The server calls the client back over the session; the
		// client sees the server's verified certificate.
		var sess = <-ts.sessions
		must.NoError(t, CallSession(testCtx(t), sess, "Test.Peer", &EchoArgs{}, &reply))
		must.Eq(t, Peer{Addr: ts.addr, Role: tlsutil.RoleServer, TLS: true}, reply.Peer)
	})
}

func TestTLS_PlainTextRefused(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	ts, _, logs := startTLSServer(t, pki, func(c net.Conn) { c.Close() })
	for _, typ := range []byte{TypeRPC, TypeRaft, TypeMultiplex} {
		t.Run(connTypeName(typ), func(t *testing.T) {
			conn, err := Dial(testCtx(t), ts.addr, typ)
			must.NoError(t, err, must.Sprint("the type byte is written before the refusal"))
			defer conn.Close()
			assertClosed(t, conn)
			must.StrContains(t, logs(), "refusing plain-text connection; tls.rpc is on: remote_addr="+conn.LocalAddr().String())
		})
	}
	t.Run("pool call", func(t *testing.T) {
		err := newPool(t).Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
		// The refusal closes a connection the pool already wrote on.
		assertNoAnswer(t, err, ts.addr)
	})
}

func TestTLS_OtherCARefused(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	ts, _, logs := startTLSServer(t, pki, func(c net.Conn) { c.Close() })
	stranger := tlsutiltest.NewPKI(t).Configurator(t, "stranger", tlsutil.RoleClient)

	t.Run("the client refuses the server", func(t *testing.T) {
		_, err := Dial(testCtx(t), ts.addr, TypeRPC, WithDialTLS(stranger.OutgoingRPC))
		assertCoded(t, err, structs.CodeUnavailable, "tls handshake", "unknown authority")
	})
	t.Run("the server refuses the client", func(t *testing.T) {
		// A stranger that trusts our CA, and presents its own certificate
		// anyway: the server's verification is what refuses it.
		cfg := func() *tls.Config {
			c := stranger.OutgoingRPC()
			c.RootCAs = pki.Configurator(t, "trusted", tlsutil.RoleClient).OutgoingRPC().RootCAs
			own := c.Certificates[0]
			c.Certificates = nil
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &own, nil }
			return c
		}
		p := newPool(t, WithPoolTLS(cfg))
		err := p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
		// Under TLS 1.3 the client's handshake ends before the server
		// checks its certificate: the request may be written first.
		assertNoAnswer(t, err, ts.addr)
		waitLog(t, logs, "refusing connection: tls handshake failed: remote_addr=127.0.0.1:", "unknown authority")
	})
}

func TestTLS_RequiredRole(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	raftConns := make(chan tlsutil.Role, 4)
	ts, _, logs := startTLSServer(t, pki, func(c net.Conn) {
		defer c.Close()
		raftConns <- connPeer(c).Role
	})
	client := pki.Configurator(t, "client", tlsutil.RoleClient)
	server := pki.Configurator(t, "other-server", tlsutil.RoleServer)

	conn, err := Dial(testCtx(t), ts.addr, TypeRaft, WithDialTLS(client.OutgoingRPC))
	must.NoError(t, err)
	defer conn.Close()
	assertClosed(t, conn)
	waitLog(t, logs, "refusing connection: certificate role not allowed for this connection type: remote_addr="+conn.LocalAddr().String(),
		"type=raft role=client required_role=server")

	conn, err = Dial(testCtx(t), ts.addr, TypeRaft, WithDialTLS(server.OutgoingRPC))
	must.NoError(t, err)
	defer conn.Close()
	select {
	case role := <-raftConns:
		must.Eq(t, tlsutil.RoleServer, role)
	case <-time.After(10 * time.Second):
		t.Fatal("the server's raft connection never reached its handler")
	}
	must.Eq(t, 0, len(raftConns), must.Sprint("the client's never did"))
}

func TestTLS_ForwardedRole(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	ts, _, logs := startTLSServer(t, pki, func(c net.Conn) { c.Close() })
	client := newPool(t, WithPoolTLS(pki.Configurator(t, "client", tlsutil.RoleClient).OutgoingRPC))
	server := newPool(t, WithPoolTLS(pki.Configurator(t, "other-server", tlsutil.RoleServer).OutgoingRPC))

	cases := []struct {
		name      string
		pool      *Pool
		forwarded bool
		refused   bool
	}{
		{"client's own request", client, false, false},
		{"client posing as a forwarding server", client, true, true},
		{"server forwarding", server, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reply EchoReply
			err := tc.pool.Call(testCtx(t), ts.addr, "Test.Forwardable", &FwdArgs{Forwarded: tc.forwarded}, &reply)
			if tc.refused {
				assertCoded(t, err, structs.CodePermissionDenied, "only a server certificate may forward")
				must.StrContains(t, logs(), "refusing forwarded request: the peer's certificate is not a server's: method=Test.Forwardable remote_addr=127.0.0.1:")
				return
			}
			must.NoError(t, err)
			must.Eq(t, "served", reply.Name)
		})
	}
	t.Run("in process", func(t *testing.T) {
		must.NoError(t, ts.srv.Call(testCtx(t), "Test.Forwardable", &FwdArgs{Forwarded: true}, nil))
	})
}

// TestTLS_Reload: the Mux builds each connection's configuration from the
// certificates loaded at that moment.
func TestTLS_Reload(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	ts, conf, _ := startTLSServer(t, pki, func(c net.Conn) { c.Close() })
	client := pki.Configurator(t, "client", tlsutil.RoleClient)
	call := func() error {
		return newPool(t, WithPoolTLS(client.OutgoingRPC)).Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{})
	}
	must.NoError(t, call())

	// The server's files now hold a client certificate: once reloaded,
	// a client verifying server.global.berth refuses it.
	cfg := conf.Config()
	pki.Rewrite(t, &cfg, tlsutil.RoleClient)
	must.NoError(t, call(), must.Sprint("not reloaded yet"))
	must.NoError(t, conf.Reload())
	assertCoded(t, call(), structs.CodeUnavailable, "server.global.berth")
}

// waitLog waits until one line of logs() holds every part of want.
func waitLog(t *testing.T, logs func() string, want ...string) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		for _, line := range strings.Split(logs(), "\n") {
			if containsAll(line, want) {
				return true
			}
		}
		return false
	}), wait.Timeout(10*time.Second), wait.Gap(10*time.Millisecond)),
		must.Func(func() string { return fmt.Sprintf("no log line said %q:\n%s", want, logs()) }))
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestTLS_ReservedConns: under TLS, with every general place taken by
// client certificates' connections, a server's certificate still gets a
// reserved place, for RPC and raft alike, and a client's does not unless
// its role is reserved too (WithReservedRoles), as the server package
// sets it.
func TestTLS_ReservedConns(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	conf := pki.Configurator(t, "server", tlsutil.RoleServer)
	client := pki.Configurator(t, "client", tlsutil.RoleClient)
	server := pki.Configurator(t, "other-server", tlsutil.RoleServer)
	start := func(t *testing.T, roles ...tlsutil.Role) (*testServer, func() string) {
		logger, rec := recordedLogger(t)
		mux := []MuxOption{
			WithMuxTLS(conf.IncomingRPC), WithRequiredRole(TypeRaft, tlsutil.RoleServer),
			WithMaxConns(6), WithReservedConns(4), WithMaxConnsPerIP(0),
		}
		if roles != nil {
			mux = append(mux, WithReservedRoles(roles...))
		}
		ts := startServerWith(t, "127.0.0.1:0", serverSetup{logger: logger, mux: mux, handlers: map[byte]func(net.Conn){TypeRaft: echoConn}})
		for range 2 { // the general places
			conn, err := Dial(testCtx(t), ts.addr, TypeRPC, WithDialTLS(client.OutgoingRPC))
			must.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			assertServed(t, conn)
		}
		return ts, rec.String
	}
	dialTLS := func(t *testing.T, ts *testServer, typ byte, c *tlsutil.Configurator) net.Conn {
		conn, err := Dial(testCtx(t), ts.addr, typ, WithDialTLS(c.OutgoingRPC))
		must.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}

	t.Run("servers only", func(t *testing.T) {
		ts, logs := start(t)
		refused := dialTLS(t, ts, TypeRPC, client)
		err := CallConn(testCtx(t), refused, "Test.Echo", &EchoArgs{}, &EchoReply{})
		assertNoAnswer(t, err, "Test.Echo")
		waitLog(t, logs, "refusing connection: remote_addr="+refused.LocalAddr().String(),
			`not a connection of type rpc with a certificate of role \"client\"`)
		// The refused connection gives its reserved place back once
		// closed: a moment after the client sees it go.
		must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return ts.mux.limits.openReserved() == 0 }),
			wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)), must.Sprint("the refused connection's place never came back"))

		assertServed(t, dialTLS(t, ts, TypeRPC, server))
		assertEchoes(t, dialTLS(t, ts, TypeRaft, server))
		must.Eq(t, 2, ts.mux.limits.openReserved())
	})

	t.Run("servers and clients", func(t *testing.T) {
		ts, _ := start(t, tlsutil.RoleServer, tlsutil.RoleClient)
		assertServed(t, dialTLS(t, ts, TypeRPC, client))
		assertServed(t, dialTLS(t, ts, TypeRPC, server))
		must.Eq(t, 2, ts.mux.limits.openReserved())
	})
}
