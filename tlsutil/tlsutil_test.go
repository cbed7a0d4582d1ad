package tlsutil

import (
	"crypto/x509"
	"encoding/pem"
	"net"
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
