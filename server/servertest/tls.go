package servertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/tlsutil"
)

// PKI is a CA whose certificate and the certificates it signs are written
// to a temp dir, for clusters with mutual TLS.
type PKI struct {
	Dir    string
	CA     *tlsutil.CA
	CAFile string
}

// NewPKI makes a CA in a temp dir.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	ca, err := tlsutil.GenerateCA()
	if err != nil {
		t.Fatalf("servertest: make CA: %v", err)
	}
	p := &PKI{Dir: t.TempDir(), CA: ca}
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	if err := os.WriteFile(p.CAFile, ca.CertPEM, 0o600); err != nil {
		t.Fatalf("servertest: write CA: %v", err)
	}
	return p
}

// Cert writes a certificate of role as name.pem and name-key.pem and
// returns the TLS config that names them: tls.rpc, tls.http and
// verify_server_hostname on.
func (p *PKI) Cert(t testing.TB, name string, role tlsutil.Role) *tlsutil.Config {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCert(role, p.CA, nil, nil)
	if err != nil {
		t.Fatalf("servertest: make %s certificate: %v", role, err)
	}
	cfg := &tlsutil.Config{
		EnableRPC: true, EnableHTTP: true, VerifyServerHostname: true,
		CAFile:   p.CAFile,
		CertFile: filepath.Join(p.Dir, name+".pem"),
		KeyFile:  filepath.Join(p.Dir, name+"-key.pem"),
	}
	if err := os.WriteFile(cfg.CertFile, certPEM, 0o600); err != nil {
		t.Fatalf("servertest: write certificate: %v", err)
	}
	if err := os.WriteFile(cfg.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatalf("servertest: write key: %v", err)
	}
	return cfg
}

// WithTLS gives every server of a cluster a server certificate of p (the
// same files for all) with verify_server_hostname, and encrypts gossip
// with gossipKey when it is not empty.
func WithTLS(t testing.TB, p *PKI, gossipKey []byte) ConfigOption {
	cfg := p.Cert(t, "server", tlsutil.RoleServer)
	return func(c *server.Config) {
		tlsCfg := *cfg
		c.TLS = &tlsCfg
		c.EncryptKey = gossipKey
	}
}
