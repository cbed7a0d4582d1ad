package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	must.NotNil(t, block)
	c, err := x509.ParseCertificate(block.Bytes)
	must.NoError(t, err)
	return c
}

func TestGenerateCert_Roles(t *testing.T) {
	ca, err := GenerateCA()
	must.NoError(t, err)
	must.True(t, ca.Cert.IsCA)
	must.Between(t, CAValidity-time.Hour, time.Until(ca.Cert.NotAfter), CAValidity)

	cases := []struct {
		role    Role
		wantDNS []string
		wantIPs []string
	}{
		{RoleServer, []string{ServerName, "localhost", "node1.example"}, []string{"127.0.0.1", "10.0.0.7"}},
		{RoleClient, []string{ClientName, "localhost", "node1.example"}, []string{"127.0.0.1", "10.0.0.7"}},
		{RoleCLI, []string{CLIName, "node1.example"}, []string{"10.0.0.7"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.role), func(t *testing.T) {
			certPEM, keyPEM, err := GenerateCert(tc.role, ca, []string{"node1.example"}, []net.IP{net.ParseIP("10.0.0.7")})
			must.NoError(t, err)
			cert := parsePEM(t, certPEM)
			must.Eq(t, tc.wantDNS, cert.DNSNames)
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			must.Eq(t, tc.wantIPs, ips)
			must.Eq(t, tc.role, RoleOf(cert))
			must.Between(t, CertValidity-time.Hour, time.Until(cert.NotAfter), CertValidity)
			must.NoError(t, verifyChain(cert, nil, poolOf(ca), x509.ExtKeyUsageClientAuth))
			block, _ := pem.Decode(keyPEM)
			must.Eq(t, "EC PRIVATE KEY", block.Type)
		})
	}
	_, _, err = GenerateCert("admin", ca, nil, nil)
	must.ErrorContains(t, err, `no certificate role "admin"`)
}

func poolOf(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func TestParseCA(t *testing.T) {
	ca, err := GenerateCA()
	must.NoError(t, err)
	other, err := GenerateCA()
	must.NoError(t, err)

	parsed, err := ParseCA(ca.CertPEM, ca.KeyPEM)
	must.NoError(t, err)
	must.Eq(t, ca.Cert.SerialNumber, parsed.Cert.SerialNumber)

	_, err = ParseCA(ca.CertPEM, other.KeyPEM)
	must.ErrorContains(t, err, "does not match")
	_, err = ParseCA([]byte("nonsense"), ca.KeyPEM)
	must.ErrorContains(t, err, "not a PEM CERTIFICATE")
	certPEM, _, err := GenerateCert(RoleServer, ca, nil, nil)
	must.NoError(t, err)
	_, err = ParseCA(certPEM, ca.KeyPEM)
	must.ErrorContains(t, err, "not a CA's")
}

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"off", Config{}, nil},
		{"complete", Config{EnableRPC: true, CAFile: "ca", CertFile: "c", KeyFile: "k"}, nil},
		{"rpc without files", Config{EnableRPC: true}, []string{"ca_file is required when tls.rpc", "cert_file", "key_file"}},
		{"http without key", Config{EnableHTTP: true, CAFile: "ca", CertFile: "c"}, []string{"key_file is required when tls.http"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				must.NoError(t, err)
				return
			}
			for _, w := range tc.want {
				must.ErrorContains(t, err, w)
			}
		})
	}
}

func TestNewConfigurator_Errors(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	good := testConfig(t, dir, "server", RoleServer, ca, caFile)
	other, err := GenerateCA()
	must.NoError(t, err)
	otherDir := t.TempDir()
	otherFile := filepath.Join(otherDir, "ca.pem")
	must.NoError(t, os.WriteFile(otherFile, other.CertPEM, 0o600))

	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"missing ca file", func(c *Config) { c.CAFile = filepath.Join(dir, "nope.pem") }, "nope.pem"},
		{"ca file not PEM", func(c *Config) { c.CAFile = c.KeyFile }, "holds no PEM certificate"},
		{"missing key", func(c *Config) { c.KeyFile = filepath.Join(dir, "nokey.pem") }, "nokey.pem"},
		{"cert of another CA", func(c *Config) { c.CAFile = otherFile }, "does not verify against ca_file"},
		{"off", func(c *Config) { c.EnableRPC, c.EnableHTTP = false, false }, "nothing to configure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := NewConfigurator(cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func TestConfigurator_RPCHandshake(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	server := testConfigurator(t, testConfig(t, dir, "server", RoleServer, ca, caFile))
	client := testConfigurator(t, testConfig(t, dir, "client", RoleClient, ca, caFile))
	// A client certificate served where a server is dialed.
	rogue := testConfigurator(t, testConfig(t, dir, "rogue", RoleClient, ca, caFile))
	lax := testConfig(t, dir, "lax", RoleClient, ca, caFile)
	lax.VerifyServerHostname = false
	laxClient := testConfigurator(t, lax)

	otherDir := t.TempDir()
	otherCA, otherFile := testCA(t, otherDir)
	stranger := testConfigurator(t, testConfig(t, otherDir, "stranger", RoleClient, otherCA, otherFile))
	strangerServer := testConfigurator(t, testConfig(t, otherDir, "strangerserver", RoleServer, otherCA, otherFile))

	cases := []struct {
		name       string
		dialer     *Configurator
		listener   *Configurator
		wantRole   Role
		cliRefuses bool // the dialer refuses the listener's certificate
		srvRefuses bool // the listener refuses the dialer's certificate
	}{
		{"client to server", client, server, RoleClient, false, false},
		{"server to server", server, server, RoleServer, false, false},
		{"client certificate posing as a server", client, rogue, "", true, true},
		{"without verify_server_hostname any certificate of the CA serves", laxClient, rogue, RoleClient, false, false},
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
			must.Eq(t, tc.wantRole, PeerRole(cs))
		})
	}
	t.Run("client of another CA that trusts ours", func(t *testing.T) {
		cc := stranger.OutgoingRPC()
		_, pool := client.current()
		cc.RootCAs = pool
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
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	serverCfg := testConfig(t, dir, "server", RoleServer, ca, caFile)
	cli := testConfigurator(t, testConfig(t, dir, "cli", RoleCLI, ca, caFile))
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
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	cfg := testConfig(t, dir, "agent", RoleClient, ca, caFile)
	c := testConfigurator(t, cfg)
	first := c.Certificate()
	must.Eq(t, RoleClient, RoleOf(first))

	t.Run("a new certificate is picked up", func(t *testing.T) {
		certPEM, keyPEM, err := GenerateCert(RoleServer, ca, nil, nil)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(cfg.CertFile, certPEM, 0o600))
		must.NoError(t, os.WriteFile(cfg.KeyFile, keyPEM, 0o600))
		must.NoError(t, c.Reload())
		must.Eq(t, RoleServer, RoleOf(c.Certificate()))
		must.Eq(t, RoleServer, RoleOf(c.IncomingRPC().Certificates[0].Leaf))
		must.Eq(t, RoleServer, RoleOf(c.httpsConfig().Certificates[0].Leaf))
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
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	lax := testConfig(t, dir, "lax", RoleServer, ca, caFile)
	lax.VerifyServerHostname = false
	dialer := testConfigurator(t, lax)
	server := testConfigurator(t, testConfig(t, dir, "server", RoleServer, ca, caFile))
	rogue := testConfigurator(t, testConfig(t, dir, "rogue", RoleClient, ca, caFile))

	_, cliErr, srvErr := handshake(t, dialer.OutgoingServerRPC(), server.IncomingRPC())
	must.NoError(t, cliErr)
	must.NoError(t, srvErr)
	_, cliErr, _ = handshake(t, dialer.OutgoingServerRPC(), rogue.IncomingRPC())
	must.ErrorContains(t, cliErr, ServerName)
	_, cliErr, _ = handshake(t, dialer.OutgoingRPC(), rogue.IncomingRPC())
	must.NoError(t, cliErr, must.Sprint("OutgoingRPC without verify_server_hostname checks the chain only"))
}

// TestConfigurator_PrepareReload: prepared files are not in use until
// commit, and a failed prepare changes nothing.
func TestConfigurator_PrepareReload(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := testCA(t, dir)
	cfg := testConfig(t, dir, "agent", RoleServer, ca, caFile)
	c := testConfigurator(t, cfg)
	first := c.Certificate().SerialNumber

	rewrite := func() {
		certPEM, keyPEM, err := GenerateCert(RoleServer, ca, nil, nil)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(cfg.CertFile, certPEM, 0o600))
		must.NoError(t, os.WriteFile(cfg.KeyFile, keyPEM, 0o600))
	}
	rewrite()
	commit, err := c.PrepareReload()
	must.NoError(t, err)
	must.Eq(t, first, c.Certificate().SerialNumber, must.Sprint("prepared, not committed"))
	commit()
	second := c.Certificate().SerialNumber
	must.NotEq(t, first, second)
	must.Eq(t, second, c.OutgoingRPC().Certificates[0].Leaf.SerialNumber)

	rewrite()
	must.NoError(t, os.WriteFile(cfg.CertFile, []byte("garbage"), 0o600))
	commit, err = c.PrepareReload()
	must.ErrorContains(t, err, cfg.CertFile)
	must.Nil(t, commit)
	must.Eq(t, second, c.Certificate().SerialNumber)
}

// TestRoleOf_NamesCompareAsHostnames: a role's name counts in any case and
// with a final dot, as the TLS hostname check counts it, and GenerateCert
// does not put another role's name in a certificate.
func TestRoleOf_NamesCompareAsHostnames(t *testing.T) {
	cases := []struct {
		dns  []string
		want Role
	}{
		{[]string{"localhost", ServerName}, RoleServer},
		{[]string{"SERVER.Global.Berth"}, RoleServer},
		{[]string{ServerName + "."}, RoleServer},
		{[]string{ClientName, ServerName}, RoleServer},
		{[]string{"Client.Global.Berth"}, RoleClient},
		{[]string{CLIName}, RoleCLI},
		{[]string{"server.global.berth.example"}, RoleNone},
		{nil, RoleNone},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, RoleOf(&x509.Certificate{DNSNames: tc.dns}), must.Sprintf("%q", tc.dns))
	}
	must.Eq(t, RoleNone, RoleOf(nil))

	ca, err := GenerateCA()
	must.NoError(t, err)
	for _, tc := range []struct {
		role  Role
		extra string
		ok    bool
	}{
		{RoleClient, "Server.Global.Berth.", false},
		{RoleCLI, ServerName, false},
		{RoleServer, ClientName, false},
		{RoleServer, ServerName, true},
		{RoleClient, "node1.example", true},
	} {
		_, _, err := GenerateCert(tc.role, ca, []string{tc.extra}, nil)
		if tc.ok {
			must.NoError(t, err)
			continue
		}
		must.ErrorContains(t, err, "cannot also name "+tc.extra)
	}
}
