package tlsutiltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-csi/berth/tlsutil"
)

// PKI is a CA whose certificate, and the certificates it signs, are
// written to Dir.
type PKI struct {
	Dir    string
	CA     *tlsutil.CA
	CAFile string // Dir/ca.pem
}

// NewPKI makes a CA and writes its certificate to ca.pem in a new temp dir.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	ca, err := tlsutil.GenerateCA()
	if err != nil {
		t.Fatalf("tlsutiltest: make CA: %v", err)
	}
	p := &PKI{Dir: t.TempDir(), CA: ca}
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	if err := os.WriteFile(p.CAFile, ca.CertPEM, 0o600); err != nil {
		t.Fatalf("tlsutiltest: write CA: %v", err)
	}
	return p
}

// Cert writes a certificate of role as name.pem and name-key.pem in Dir
// and returns the TLS config that names them: tls.rpc, tls.http and
// verify_server_hostname on (verify_https_client off).
func (p *PKI) Cert(t testing.TB, name string, role tlsutil.Role) *tlsutil.Config {
	t.Helper()
	cfg := &tlsutil.Config{
		EnableRPC: true, EnableHTTP: true, VerifyServerHostname: true,
		CAFile:   p.CAFile,
		CertFile: filepath.Join(p.Dir, name+".pem"),
		KeyFile:  filepath.Join(p.Dir, name+"-key.pem"),
	}
	p.Rewrite(t, cfg, role)
	return cfg
}

// Rewrite writes a new certificate of role, signed by the CA, into cfg's
// cert_file and key_file (for tests of a reload).
func (p *PKI) Rewrite(t testing.TB, cfg *tlsutil.Config, role tlsutil.Role) {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCert(role, p.CA, nil, nil)
	if err != nil {
		t.Fatalf("tlsutiltest: make %s certificate: %v", role, err)
	}
	if err := os.WriteFile(cfg.CertFile, certPEM, 0o600); err != nil {
		t.Fatalf("tlsutiltest: write certificate: %v", err)
	}
	if err := os.WriteFile(cfg.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatalf("tlsutiltest: write key: %v", err)
	}
}

// Configurator loads a new certificate of role (Cert's files and settings).
func (p *PKI) Configurator(t testing.TB, name string, role tlsutil.Role) *tlsutil.Configurator {
	t.Helper()
	c, err := tlsutil.NewConfigurator(*p.Cert(t, name, role))
	if err != nil {
		t.Fatalf("tlsutiltest: load %s certificate: %v", role, err)
	}
	return c
}
