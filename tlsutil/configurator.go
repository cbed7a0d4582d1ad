package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Configurator holds an agent's CA and certificate, loaded from the files
// its Config names, and builds the *tls.Config of each kind of connection
// from them. Reload reads the files again.
type Configurator struct {
	config Config

	mu   sync.RWMutex
	cert *tls.Certificate
	pool *x509.CertPool
}

// NewConfigurator validates cfg and loads its files. The error names the
// field or the file that is wrong.
func NewConfigurator(cfg Config) (*Configurator, error) {
	if !cfg.Enabled() {
		return nil, errors.New("tls: neither tls.rpc nor tls.http is on; there is nothing to configure")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Configurator{config: cfg}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Config is the configuration the Configurator was made with.
func (c *Configurator) Config() Config { return c.config }

// Reload reads the CA, certificate and key files again. On any error it
// keeps the ones it had and returns the error; on success the next
// connection, incoming or outgoing, uses the new ones.
func (c *Configurator) Reload() error {
	commit, err := c.PrepareReload()
	if err != nil {
		return err
	}
	commit()
	return nil
}

// PrepareReload reads and checks the CA, certificate and key files again
// but does not use them yet: commit does, for the next connection. On an
// error nothing changes. Several Configurators reload all or none this
// way: prepare each, and commit only when every one prepared.
func (c *Configurator) PrepareReload() (commit func(), err error) {
	cert, pool, err := load(c.config)
	if err != nil {
		return nil, err
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cert, c.pool = cert, pool
	}, nil
}

// Certificate is the agent's current certificate, parsed.
func (c *Configurator) Certificate() *x509.Certificate {
	cert, _ := c.current()
	return cert.Leaf
}

func (c *Configurator) current() (*tls.Certificate, *x509.CertPool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cert, c.pool
}

// load reads cfg's files and checks that the certificate is signed by the
// CA, so that a reload with a mismatched pair fails here rather than in
// every handshake after it.
func load(cfg Config) (*tls.Certificate, *x509.CertPool, error) {
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: read ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("tls: ca_file %q holds no PEM certificate", cfg.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: load cert_file %q and key_file %q: %w", cfg.CertFile, cfg.KeyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("tls: parse cert_file %q: %w", cfg.CertFile, err)
		}
	}
	if err := verifyChain(cert.Leaf, cert.Certificate[1:], pool, x509.ExtKeyUsageAny); err != nil {
		return nil, nil, fmt.Errorf("tls: cert_file %q does not verify against ca_file %q: %w", cfg.CertFile, cfg.CAFile, err)
	}
	return &cert, pool, nil
}

// verifyChain checks leaf, with intermediates, against roots for usage,
// not its names.
func verifyChain(leaf *x509.Certificate, intermediates [][]byte, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, der := range intermediates {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		opts.Intermediates.AddCert(c)
	}
	_, err := leaf.Verify(opts)
	return err
}

// IncomingRPC is the configuration of one RPC connection a server (or a
// client, for the calls the servers make back) accepts: the peer must
// present a certificate signed by the CA. Which role it may have is the
// RPC layer's to check (PeerRole).
func (c *Configurator) IncomingRPC() *tls.Config {
	cert, pool := c.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}
}

// OutgoingRPC is the configuration of one RPC connection an agent dials to
// a server. It presents the agent's certificate and verifies the server's
// against the CA; with VerifyServerHostname the server's certificate must
// name server.global.berth (OutgoingServerRPC), so a client certificate
// cannot pose as a server. Without it any certificate of the CA made for
// serving TLS is accepted (a client agent's too: its HTTPS API needs that).
func (c *Configurator) OutgoingRPC() *tls.Config {
	if c.config.VerifyServerHostname {
		return c.OutgoingServerRPC()
	}
	cert, pool := c.current()
	// The chain is verified here, the name is not: servers are dialed by
	// address, and their certificates need not list it.
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		Certificates:       []tls.Certificate{*cert},
		RootCAs:            pool,
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server presented no certificate")
			}
			var inter [][]byte
			for _, ic := range cs.PeerCertificates[1:] {
				inter = append(inter, ic.Raw)
			}
			return verifyChain(cs.PeerCertificates[0], inter, pool, x509.ExtKeyUsageServerAuth)
		},
	}
}

// OutgoingServerRPC is the configuration of one RPC connection that must
// reach a server whatever VerifyServerHostname says: the peer's
// certificate must be of the CA and name server.global.berth. A server
// checks a new gossip member with it before raft takes the member in.
func (c *Configurator) OutgoingServerRPC() *tls.Config {
	cert, pool := c.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
		RootCAs:      pool,
		ServerName:   ServerName,
	}
}

// IncomingHTTPS is the configuration of the HTTPS API's listener. It
// builds the configuration of each connection at its handshake, so a
// Reload applies to the next connection. With VerifyHTTPSClient a client
// certificate signed by the CA is required.
func (c *Configurator) IncomingHTTPS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return c.httpsConfig(), nil
		},
	}
}

func (c *Configurator) httpsConfig() *tls.Config {
	cert, pool := c.current()
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
	}
	if c.config.VerifyHTTPSClient {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = pool
	}
	return cfg
}
