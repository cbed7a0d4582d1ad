package tlsutil

import (
	"errors"
	"fmt"
)

// Certificate names. A certificate's role is the first of these its DNS
// names hold (see RoleOf).
const (
	ServerName = "server.global.berth"
	ClientName = "client.global.berth"
	CLIName    = "cli.global.berth"
)

// Role is what a certificate speaks for.
type Role string

// Roles, as `berth tls cert create -server|-client|-cli` makes them.
const (
	RoleNone   Role = "" // no verified certificate, or none of berth's names
	RoleServer Role = "server"
	RoleClient Role = "client"
	RoleCLI    Role = "cli"
)

// Config is the agent's tls { } block. Relative paths are the caller's to
// resolve; the Configurator opens them as given.
type Config struct {
	// EnableRPC makes every RPC connection (raft, server to server, client
	// to server) TLS with both sides verified.
	EnableRPC bool
	// EnableHTTP serves the HTTP API over HTTPS.
	EnableHTTP bool

	// CAFile is the PEM CA that signs every agent's certificate.
	CAFile string
	// CertFile and KeyFile are this agent's PEM certificate and key.
	CertFile string
	KeyFile  string

	// VerifyServerHostname makes outgoing RPC connections accept only a
	// server certificate (server.global.berth). (Where a server is
	// required, the servers accept only a server certificate whatever it
	// says.)
	VerifyServerHostname bool
	// VerifyHTTPSClient makes the HTTPS API require a client certificate
	// signed by the CA.
	VerifyHTTPSClient bool
}

// Enabled reports whether TLS is on for RPC or HTTP.
func (c *Config) Enabled() bool { return c != nil && (c.EnableRPC || c.EnableHTTP) }

// Validate names every field that is missing for the switches that are on.
func (c *Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	on := "tls.rpc"
	if !c.EnableRPC {
		on = "tls.http"
	}
	if c.CAFile == "" {
		errs = append(errs, fmt.Errorf("tls: ca_file is required when %s is on; make one with `berth tls ca create`", on))
	}
	if c.CertFile == "" {
		errs = append(errs, fmt.Errorf("tls: cert_file is required when %s is on; make one with `berth tls cert create`", on))
	}
	if c.KeyFile == "" {
		errs = append(errs, fmt.Errorf("tls: key_file is required when %s is on; it is written next to the certificate by `berth tls cert create`", on))
	}
	return errors.Join(errs...)
}
