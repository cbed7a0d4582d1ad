package tlsutil_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

func TestNewConfigurator_Errors(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	good := *pki.Cert(t, "server", tlsutil.RoleServer)
	otherFile := tlsutiltest.NewPKI(t).CAFile

	cases := []struct {
		name string
		edit func(*tlsutil.Config)
		want string
	}{
		{"missing ca file", func(c *tlsutil.Config) { c.CAFile = filepath.Join(pki.Dir, "nope.pem") }, "nope.pem"},
		{"ca file not PEM", func(c *tlsutil.Config) { c.CAFile = c.KeyFile }, "holds no PEM certificate"},
		{"missing key", func(c *tlsutil.Config) { c.KeyFile = filepath.Join(pki.Dir, "nokey.pem") }, "nokey.pem"},
		{"cert of another CA", func(c *tlsutil.Config) { c.CAFile = otherFile }, "does not verify against ca_file"},
		{"off", func(c *tlsutil.Config) { c.EnableRPC, c.EnableHTTP = false, false }, "nothing to configure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := tlsutil.NewConfigurator(cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func TestConfigurator_RPCHandshake(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	server := pki.Configurator(t, "server", tlsutil.RoleServer)
	client := pki.Configurator(t, "client", tlsutil.RoleClient)
	// A client certificate served where a server is dialed.
	rogue := pki.Configurator(t, "rogue", tlsutil.RoleClient)
	lax := pki.Cert(t, "lax", tlsutil.RoleClient)
	lax.VerifyServerHostname = false
	laxClient := testConfigurator(t, *lax)

	other := tlsutiltest.NewPKI(t)
	stranger := other.Configurator(t, "stranger", tlsutil.RoleClient)
	strangerServer := other.Configurator(t, "strangerserver", tlsutil.RoleServer)

	cases := []struct {
		name       string
		dialer     *tlsutil.Configurator
		listener   *tlsutil.Configurator
		wantRole   tlsutil.Role
		cliRefuses bool // the dialer refuses the listener's certificate
		srvRefuses bool // the listener refuses the dialer's certificate
	}{
		{"client to server", client, server, tlsutil.RoleClient, false, false},
		{"server to server", server, server, tlsutil.RoleServer, false, false},
		{"client certificate posing as a server", client, rogue, "", true, true},
		{"without verify_server_hostname any certificate of the CA serves", laxClient, rogue, tlsutil.RoleClient, false, false},
		{"client of another CA", stranger, server, "", true, true},
		{"server of another CA", client, strangerServer, "", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, cliErr, srvErr := handshake(t, tc.dialer.OutgoingRPC(), tc.listener.IncomingRPC())
			if tc.cliRefuses {
				must.Error(t, cliErr)
			} else {
				must.NoError(t, cliErr)
			}
			if tc.srvRefuses {
				must.Error(t, srvErr)
				return
			}
			must.NoError(t, srvErr)
			must.Eq(t, tc.wantRole, tlsutil.PeerRole(cs))
		})
	}
	t.Run("client of another CA that trusts ours", func(t *testing.T) {
		cc := stranger.OutgoingRPC()
		cc.RootCAs = client.OutgoingRPC().RootCAs
		// Present it even though the server asks for certificates of our CA.
		own := cc.Certificates[0]
		cc.Certificates = nil
		cc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &own, nil }
		_, cliErr, srvErr := handshake(t, cc, server.IncomingRPC())
		must.NoError(t, cliErr, must.Sprint("it accepts the server"))
		must.ErrorContains(t, srvErr, "unknown authority", must.Sprint("the server refuses it"))
	})
}

func TestConfigurator_IncomingHTTPS(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	serverCfg := *pki.Cert(t, "server", tlsutil.RoleServer)
	serverCfg.VerifyHTTPSClient = true
	cli := pki.Configurator(t, "cli", tlsutil.RoleCLI)
	verifying := testConfigurator(t, serverCfg)
	serverCfg.VerifyHTTPSClient = false
	open := testConfigurator(t, serverCfg)

	// What the CLI sends: the CA, and its certificate or none.
	withCert := cli.OutgoingRPC()
	noCert := cli.OutgoingRPC()
	noCert.Certificates = nil

	_, cliErr, srvErr := handshake(t, withCert, verifying.IncomingHTTPS())
	must.NoError(t, cliErr)
	must.NoError(t, srvErr)
	_, _, srvErr = handshake(t, noCert, verifying.IncomingHTTPS())
	must.ErrorContains(t, srvErr, "certificate")
	_, cliErr, srvErr = handshake(t, noCert, open.IncomingHTTPS())
	must.NoError(t, cliErr)
	must.NoError(t, srvErr)
}

func TestConfigurator_Reload(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	cfg := pki.Cert(t, "agent", tlsutil.RoleClient)
	c := testConfigurator(t, *cfg)
	first := c.Certificate()
	must.Eq(t, tlsutil.RoleClient, tlsutil.RoleOf(first))

	t.Run("a new certificate is picked up", func(t *testing.T) {
		pki.Rewrite(t, cfg, tlsutil.RoleServer)
		must.NoError(t, c.Reload())
		must.Eq(t, tlsutil.RoleServer, tlsutil.RoleOf(c.Certificate()))
		must.Eq(t, tlsutil.RoleServer, tlsutil.RoleOf(c.IncomingRPC().Certificates[0].Leaf))
		https, err := c.IncomingHTTPS().GetConfigForClient(nil)
		must.NoError(t, err)
		must.Eq(t, tlsutil.RoleServer, tlsutil.RoleOf(https.Certificates[0].Leaf))
	})
	t.Run("a bad file keeps the old certificate", func(t *testing.T) {
		before := c.Certificate()
		must.NoError(t, os.WriteFile(cfg.KeyFile, []byte("not a key"), 0o600))
		err := c.Reload()
		must.ErrorContains(t, err, cfg.KeyFile)
		must.Eq(t, before.SerialNumber, c.Certificate().SerialNumber)
		must.Eq(t, before.SerialNumber, c.OutgoingRPC().Certificates[0].Leaf.SerialNumber)
	})
}

// TestConfigurator_OutgoingServerRPC: the dial that must reach a server
// takes only a server certificate, whatever verify_server_hostname says.
func TestConfigurator_OutgoingServerRPC(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	lax := pki.Cert(t, "lax", tlsutil.RoleServer)
	lax.VerifyServerHostname = false
	dialer := testConfigurator(t, *lax)
	server := pki.Configurator(t, "server", tlsutil.RoleServer)
	rogue := pki.Configurator(t, "rogue", tlsutil.RoleClient)

	_, cliErr, srvErr := handshake(t, dialer.OutgoingServerRPC(), server.IncomingRPC())
	must.NoError(t, cliErr)
	must.NoError(t, srvErr)
	_, cliErr, _ = handshake(t, dialer.OutgoingServerRPC(), rogue.IncomingRPC())
	must.ErrorContains(t, cliErr, tlsutil.ServerName)
	_, cliErr, _ = handshake(t, dialer.OutgoingRPC(), rogue.IncomingRPC())
	must.NoError(t, cliErr, must.Sprint("OutgoingRPC without verify_server_hostname checks the chain only"))
}

// TestConfigurator_PrepareReload: prepared files are not in use until
// commit, and a failed prepare changes nothing.
func TestConfigurator_PrepareReload(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	cfg := pki.Cert(t, "agent", tlsutil.RoleServer)
	c := testConfigurator(t, *cfg)
	first := c.Certificate().SerialNumber

	pki.Rewrite(t, cfg, tlsutil.RoleServer)
	commit, err := c.PrepareReload()
	must.NoError(t, err)
	must.Eq(t, first, c.Certificate().SerialNumber, must.Sprint("prepared, not committed"))
	commit()
	second := c.Certificate().SerialNumber
	must.NotEq(t, first, second)
	must.Eq(t, second, c.OutgoingRPC().Certificates[0].Leaf.SerialNumber)

	pki.Rewrite(t, cfg, tlsutil.RoleServer)
	must.NoError(t, os.WriteFile(cfg.CertFile, []byte("garbage"), 0o600))
	commit, err = c.PrepareReload()
	must.ErrorContains(t, err, cfg.CertFile)
	must.Nil(t, commit)
	must.Eq(t, second, c.Certificate().SerialNumber)
}

// handshake runs a TLS handshake over TCP on 127.0.0.1 between a client
// with cc and a server with sc. It returns the server's view of the
// connection and the client's and server's handshake errors. (In TLS 1.3
// the client may finish before the server refuses its certificate: the
// server's error is the one that says so.)
func handshake(t *testing.T, cc, sc *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type result struct {
		cs  tls.ConnectionState
		err error
	}
	srvDone := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			srvDone <- result{err: err}
			return
		}
		defer c.Close()
		srv := tls.Server(c, sc)
		err = srv.HandshakeContext(ctx)
		srvDone <- result{srv.ConnectionState(), err}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	must.NoError(t, err)
	defer raw.Close()
	cliErr := tls.Client(raw, cc).HandshakeContext(ctx)
	r := <-srvDone
	return r.cs, cliErr, r.err
}

func testConfigurator(t *testing.T, cfg tlsutil.Config) *tlsutil.Configurator {
	t.Helper()
	c, err := tlsutil.NewConfigurator(cfg)
	must.NoError(t, err)
	return c
}
