package servertest

import (
	"testing"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// WithTLS gives every server of a cluster a server certificate of p (the
// same files for all) with verify_server_hostname, and encrypts gossip
// with gossipKey when it is not empty.
func WithTLS(t testing.TB, p *tlsutiltest.PKI, gossipKey []byte) ConfigOption {
	cfg := p.Cert(t, "server", tlsutil.RoleServer)
	return func(c *server.Config) {
		tlsCfg := *cfg
		c.TLS = &tlsCfg
		c.EncryptKey = gossipKey
	}
}
