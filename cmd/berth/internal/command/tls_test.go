package command

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/tlsutil"
)

// readCert parses the PEM certificate in path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	block, _ := pem.Decode(b)
	must.NotNil(t, block, must.Sprintf("%s is not PEM", path))
	c, err := x509.ParseCertificate(block.Bytes)
	must.NoError(t, err)
	return c
}

func mustMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	must.NoError(t, err)
	must.EqOp(t, want, fi.Mode().Perm(), must.Sprintf("mode of %s", path))
}

func TestTLSCACreate(t *testing.T) {
	t.Chdir(t.TempDir())
	r := runCLI(t, "", "", "tls", "ca", "create")
	mustExit(t, r, exitOK, "")
	must.EqOp(t, "==> CA certificate saved to: berth-agent-ca.pem\n==> CA key saved to: berth-agent-ca-key.pem\n", r.stdout)
	must.True(t, readCert(t, "berth-agent-ca.pem").IsCA)
	mustMode(t, "berth-agent-ca-key.pem", 0o600)

	before, err := os.ReadFile("berth-agent-ca.pem")
	must.NoError(t, err)
	r = runCLI(t, "", "", "tls", "ca", "create")
	mustExit(t, r, exitError, "berth-agent-ca.pem already exists")
	after, err := os.ReadFile("berth-agent-ca.pem")
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("an existing CA is never overwritten"))

	must.NoError(t, os.Remove("berth-agent-ca.pem"))
	r = runCLI(t, "", "", "tls", "ca", "create")
	mustExit(t, r, exitError, "berth-agent-ca-key.pem already exists")
}

func TestTLSCertCreate(t *testing.T) {
	t.Chdir(t.TempDir())
	mustExit(t, runCLI(t, "", "", "tls", "ca", "create"), exitOK, "")
	ca := readCert(t, "berth-agent-ca.pem")
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	cases := []struct {
		args     []string
		stdout   string
		file     string
		role     tlsutil.Role
		dnsNames []string
		ips      []string
	}{
		{[]string{"-server", "-additional-dnsname", "node1.example", "-additional-ipaddress", "10.0.0.7"},
			"==> Server certificate saved to: global-server-berth-0.pem\n==> Server key saved to: global-server-berth-0-key.pem\n",
			"global-server-berth-0", tlsutil.RoleServer,
			[]string{"server.global.berth", "localhost", "node1.example"}, []string{"127.0.0.1", "10.0.0.7"}},
		{[]string{"-server"},
			"==> Server certificate saved to: global-server-berth-1.pem\n==> Server key saved to: global-server-berth-1-key.pem\n",
			"global-server-berth-1", tlsutil.RoleServer, []string{"server.global.berth", "localhost"}, []string{"127.0.0.1"}},
		{[]string{"-client"},
			"==> Client certificate saved to: global-client-berth-0.pem\n==> Client key saved to: global-client-berth-0-key.pem\n",
			"global-client-berth-0", tlsutil.RoleClient, []string{"client.global.berth", "localhost"}, []string{"127.0.0.1"}},
		{[]string{"-cli", "-ca", "berth-agent-ca.pem", "-key", "berth-agent-ca-key.pem"},
			"==> CLI certificate saved to: global-cli-berth-0.pem\n==> CLI key saved to: global-cli-berth-0-key.pem\n",
			"global-cli-berth-0", tlsutil.RoleCLI, []string{"cli.global.berth"}, nil},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runCLI(t, "", "", append([]string{"tls", "cert", "create"}, tc.args...)...)
			mustExit(t, r, exitOK, "")
			must.EqOp(t, tc.stdout, r.stdout)
			cert := readCert(t, tc.file+".pem")
			must.Eq(t, tc.role, tlsutil.RoleOf(cert))
			must.Eq(t, tc.dnsNames, cert.DNSNames)
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			must.Eq(t, tc.ips, ips)
			_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			must.NoError(t, err)
			mustMode(t, tc.file+"-key.pem", 0o600)
		})
	}
}

func TestTLSCertCreate_Errors(t *testing.T) {
	t.Chdir(t.TempDir())
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no role", nil, exitUsage, "give exactly one of -server, -client or -cli"},
		{"two roles", []string{"-server", "-client"}, exitUsage, "give exactly one of -server, -client or -cli"},
		{"bad ip", []string{"-server", "-additional-ipaddress", "10.0.0"}, exitUsage, `-additional-ipaddress "10.0.0" is not an IP address`},
		{"no CA", []string{"-server"}, exitError, "run `berth tls ca create` first"},
		{"key of another CA", []string{"-server", "-ca", filepath.Join("other", "berth-agent-ca.pem")}, exitError, "does not match the CA certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "key of another CA" {
				mustExit(t, runCLI(t, "", "", "tls", "ca", "create"), exitOK, "")
				must.NoError(t, os.Mkdir("other", 0o700))
				t.Chdir("other")
				mustExit(t, runCLI(t, "", "", "tls", "ca", "create"), exitOK, "")
				t.Chdir("..")
			}
			r := runCLI(t, "", "", append([]string{"tls", "cert", "create"}, tc.args...)...)
			mustExit(t, r, tc.code, tc.stderr)
			matches, err := filepath.Glob("global-*")
			must.NoError(t, err)
			must.SliceEmpty(t, matches, must.Sprint("nothing written"))
		})
	}
}

func TestOperatorGossipKeygen(t *testing.T) {
	keys := map[string]bool{}
	for range 2 {
		r := runCLI(t, "", "", "operator", "gossip", "keygen")
		mustExit(t, r, exitOK, "")
		key := strings.TrimSuffix(r.stdout, "\n")
		b, err := base64.StdEncoding.DecodeString(key)
		must.NoError(t, err)
		must.Len(t, 32, b)
		keys[key] = true
	}
	must.MapLen(t, 2, keys, must.Sprint("every key is new"))
}
