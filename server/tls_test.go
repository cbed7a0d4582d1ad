package server

import (
	"context"
	"crypto/tls"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/tlsutil"
)

// testCerts is a CA in a temp dir; cert writes certificates it signs.
type testCerts struct {
	dir    string
	ca     *tlsutil.CA
	caFile string
}

func newTestCerts(t *testing.T) *testCerts {
	t.Helper()
	ca, err := tlsutil.GenerateCA()
	must.NoError(t, err)
	c := &testCerts{dir: t.TempDir(), ca: ca}
	c.caFile = filepath.Join(c.dir, "ca.pem")
	must.NoError(t, os.WriteFile(c.caFile, ca.CertPEM, 0o600))
	return c
}

// cert writes a role certificate as name.pem and name-key.pem, and returns
// the TLS config naming them (verify_server_hostname on).
func (c *testCerts) cert(t *testing.T, name string, role tlsutil.Role) *tlsutil.Config {
	t.Helper()
	cfg := &tlsutil.Config{EnableRPC: true, VerifyServerHostname: true, CAFile: c.caFile,
		CertFile: filepath.Join(c.dir, name+".pem"), KeyFile: filepath.Join(c.dir, name+"-key.pem")}
	c.rewrite(t, cfg, role)
	return cfg
}

// rewrite writes a new role certificate into cfg's files.
func (c *testCerts) rewrite(t *testing.T, cfg *tlsutil.Config, role tlsutil.Role) {
	t.Helper()
	certPEM, keyPEM, err := tlsutil.GenerateCert(role, c.ca, nil, nil)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(cfg.CertFile, certPEM, 0o600))
	must.NoError(t, os.WriteFile(cfg.KeyFile, keyPEM, 0o600))
}

func TestServer_ReloadTLS(t *testing.T) {
	certs := newTestCerts(t)
	cfg := certs.cert(t, "server", tlsutil.RoleServer)
	s := testServer(t, func(c *Config) { c.TLS = cfg })

	// served returns the serial of the certificate a new connection sees.
	client, err := tlsutil.NewConfigurator(*certs.cert(t, "client", tlsutil.RoleClient))
	must.NoError(t, err)
	served := func() *big.Int {
		var (
			mu     sync.Mutex
			serial *big.Int
		)
		config := func() *tls.Config {
			c := client.OutgoingRPC()
			c.VerifyConnection = func(cs tls.ConnectionState) error {
				mu.Lock()
				defer mu.Unlock()
				serial = cs.PeerCertificates[0].SerialNumber
				return nil
			}
			return c
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := rpc.Dial(ctx, s.RPCAddr(), rpc.TypeRPC, rpc.WithDialTLS(config))
		must.NoError(t, err)
		_ = conn.Close()
		mu.Lock()
		defer mu.Unlock()
		return serial
	}

	first := served()
	certs.rewrite(t, cfg, tlsutil.RoleServer)
	must.Eq(t, first, served(), must.Sprint("not reloaded yet"))
	must.NoError(t, s.ReloadTLS())
	second := served()
	must.NotEq(t, first, second)

	must.NoError(t, os.WriteFile(cfg.CertFile, []byte("garbage"), 0o600))
	must.ErrorContains(t, s.ReloadTLS(), cfg.CertFile)
	must.Eq(t, second, served(), must.Sprint("a failed reload keeps the certificate"))

	must.NoError(t, testServer(t).ReloadTLS(), must.Sprint("without TLS there is nothing to reload"))
}

func TestConfig_Validate_TLSAndGossipKey(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"gossip key of 32 bytes", func(c *Config) { c.EncryptKey = make([]byte, 32) }, ""},
		{"gossip key of 16 bytes", func(c *Config) { c.EncryptKey = make([]byte, 16) },
			"server.encrypt must be 32 bytes base64; make one with `berth operator gossip keygen`"},
		{"tls rpc without files", func(c *Config) { c.TLS = &tlsutil.Config{EnableRPC: true} }, "server: tls: ca_file is required when tls.rpc is on"},
		{"tls for http only is not the server's", func(c *Config) { c.TLS = &tlsutil.Config{EnableHTTP: true} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			tc.edit(cfg)
			err := cfg.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, tc.want)
		})
	}
}
