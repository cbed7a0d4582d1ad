package client

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/tlsutil"
)

func TestNew_TLS(t *testing.T) {
	cases := []struct {
		name string
		tls  *tlsutil.Config
		want string
	}{
		{"rpc without files", &tlsutil.Config{EnableRPC: true}, "client: tls: ca_file is required when tls.rpc is on"},
		{"missing CA file", &tlsutil.Config{EnableRPC: true, CAFile: "/nope/ca.pem", CertFile: "/nope/c.pem", KeyFile: "/nope/k.pem"},
			"/nope/ca.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.Servers = []string{"127.0.0.1:4747"}
			cfg.TLS = tc.tls
			_, err := New(cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("without tls there is nothing to reload", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Servers = []string{"127.0.0.1:4747"}
		c, err := New(cfg)
		must.NoError(t, err)
		must.NoError(t, c.ReloadTLS())
	})
}
