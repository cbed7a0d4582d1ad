package server

import (
	"context"
	"crypto/tls"
	"math/big"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

func TestServer_ReloadTLS(t *testing.T) {
	certs := tlsutiltest.NewPKI(t)
	cfg := certs.Cert(t, "server", tlsutil.RoleServer)
	s := testServer(t, func(c *Config) { c.TLS = cfg })

	// served returns the serial of the certificate a new connection sees.
	client := certs.Configurator(t, "client", tlsutil.RoleClient)
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
	certs.Rewrite(t, cfg, tlsutil.RoleServer)
	must.Eq(t, first, served(), must.Sprint("not reloaded yet"))
	commit, err := s.PrepareReloadTLS()
	must.NoError(t, err)
	commit()
	second := served()
	must.NotEq(t, first, second)

	must.NoError(t, os.WriteFile(cfg.CertFile, []byte("garbage"), 0o600))
	_, err = s.PrepareReloadTLS()
	must.ErrorContains(t, err, cfg.CertFile)
	must.Eq(t, second, served(), must.Sprint("a failed reload keeps the certificate"))

	commit, err = testServer(t).PrepareReloadTLS()
	must.NoError(t, err, must.Sprint("without TLS there is nothing to reload"))
	commit()
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
