package agent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/tlsutil"
)

// TLSConfig is the `tls { }` block. Relative file names are read from the
// config file's directory.
type TLSConfig struct {
	HTTP                 bool   `hcl:"http,optional"`
	RPC                  bool   `hcl:"rpc,optional"`
	CAFile               string `hcl:"ca_file,optional"`
	CertFile             string `hcl:"cert_file,optional"`
	KeyFile              string `hcl:"key_file,optional"`
	VerifyServerHostname bool   `hcl:"verify_server_hostname,optional"`
	VerifyHTTPSClient    bool   `hcl:"verify_https_client,optional"`
}

// ACLConfig is the `acl { }` block.
type ACLConfig struct {
	Enabled bool `hcl:"enabled,optional"`
}

// config is the block as the servers, clients and HTTPS listener take it.
func (t *TLSConfig) config() tlsutil.Config {
	return tlsutil.Config{
		EnableRPC:            t.RPC,
		EnableHTTP:           t.HTTP,
		CAFile:               t.CAFile,
		CertFile:             t.CertFile,
		KeyFile:              t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname,
		VerifyHTTPSClient:    t.VerifyHTTPSClient,
	}
}

// rpcTLS is the TLS config of the server's and client's RPC, nil when
// tls.rpc is off.
func (c *Config) rpcTLS() *tlsutil.Config {
	if c.TLS == nil || !c.TLS.RPC {
		return nil
	}
	t := c.TLS.config()
	return &t
}

// checkSecurity resolves the tls block's files against the directory of
// the config file (path), checks that the block names the files its
// switches need, and decodes server.encrypt. Every problem is named.
func (c *Config) checkSecurity(path string) error {
	var errs []error
	if t := c.TLS; t != nil {
		dir := filepath.Dir(path)
		for _, f := range []*string{&t.CAFile, &t.CertFile, &t.KeyFile} {
			if *f != "" && !filepath.IsAbs(*f) {
				*f = filepath.Join(dir, *f)
			}
		}
		tc := t.config()
		if err := tc.Validate(); err != nil {
			errs = append(errs, err)
		}
		if t.VerifyHTTPSClient && !t.HTTP {
			errs = append(errs, errors.New("tls: verify_https_client needs http = true"))
		}
		if t.VerifyServerHostname && !t.RPC {
			errs = append(errs, errors.New("tls: verify_server_hostname needs rpc = true"))
		}
	}
	if key := strings.TrimSpace(c.Server.Encrypt); key != "" {
		b, err := base64.StdEncoding.DecodeString(key)
		if err != nil || len(b) != server.GossipKeySize {
			errs = append(errs, errors.New("server.encrypt must be 32 bytes base64; make one with `berth operator gossip keygen`"))
		} else {
			c.encryptKey = b
		}
	}
	return errors.Join(errs...)
}

// checkACLServerTLS: a server with ACLs needs tls.rpc and
// verify_server_hostname. Without mutual TLS a server cannot tell another
// server from any caller, so it could not share the root key (nor trust
// tokens sent in clear); without verify_server_hostname an agent that
// dials a server would take any certificate of the CA, a client's too,
// for one.
func (c *Config) checkACLServerTLS() error {
	if !c.Server.Enabled || c.ACL == nil || !c.ACL.Enabled {
		return nil
	}
	var set []string
	if c.TLS == nil || !c.TLS.RPC {
		set = append(set, "rpc = true")
	}
	if c.TLS == nil || !c.TLS.VerifyServerHostname {
		set = append(set, "verify_server_hostname = true")
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("agent config: acl { enabled = true } on a server needs tls { rpc = true } with verify_server_hostname = true: "+
		"servers share the root key and prove who they are over mutual TLS, and whoever dials a server checks that it holds "+
		"a server certificate (make certificates with `berth tls`); set %s in the tls block", strings.Join(set, " and "))
}
