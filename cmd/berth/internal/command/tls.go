package command

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"

	"github.com/berth-csi/berth/tlsutil"
)

// Files `berth tls` writes, in the current directory (INTERFACE.md).
const (
	caCertFile = "berth-agent-ca.pem"
	caKeyFile  = "berth-agent-ca-key.pem"
)

var tlsCACreateCommand = &command{
	name:     "tls ca create",
	synopsis: "Create a certificate authority for agents' mutual TLS",
	help: `[options]

  Create a certificate authority: berth-agent-ca.pem (the certificate every
  agent and the CLI trust, -ca-cert) and berth-agent-ca-key.pem (its key:
  keep it off the agents, and safe). Both are written to the current
  directory; existing files are never overwritten. The CA is an ECDSA P-256
  key, valid for 5 years.
`,
	run: runTLSCACreate,
}

func runTLSCACreate(_ context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	for _, f := range []string{caCertFile, caKeyFile} {
		if exists(f) {
			return m.fail("%s already exists; move it away, or run `berth tls ca create` in another directory", f)
		}
	}
	ca, err := tlsutil.GenerateCA()
	if err != nil {
		return m.fail("create CA: %v", err)
	}
	if err := writeNew(caCertFile, ca.CertPEM, 0o644); err != nil {
		return m.fail("%v", err)
	}
	fmt.Fprintf(m.stdout, "==> CA certificate saved to: %s\n", caCertFile)
	if err := writeNew(caKeyFile, ca.KeyPEM, 0o600); err != nil {
		return m.fail("%v", err)
	}
	fmt.Fprintf(m.stdout, "==> CA key saved to: %s\n", caKeyFile)
	return exitOK
}

var tlsCertCreateCommand = &command{
	name:     "tls cert create",
	synopsis: "Create a server, client or CLI certificate signed by the CA",
	help: `-server|-client|-cli [options]

  Create a certificate and its key, signed by the CA of 'berth tls ca
  create', in the current directory: global-server-berth-0.pem and
  global-server-berth-0-key.pem for -server (global-client-berth-N and
  global-cli-berth-N likewise); N is the first number whose files do not
  exist yet. Server certificates name server.global.berth, localhost and
  127.0.0.1; client certificates client.global.berth, localhost and
  127.0.0.1; CLI certificates cli.global.berth. They are valid for a year.

Cert Create Options:

  -server, -client, -cli
    The certificate's role; give exactly one.

  -additional-dnsname=<name>
    Another DNS name for the certificate (repeatable).

  -additional-ipaddress=<ip>
    Another IP address for the certificate (repeatable): every address
    besides 127.0.0.1 that the agent's HTTPS API is reached at, its own
    -bind address included, on this host or another. Without it an
    https:// address other than 127.0.0.1 fails with "x509: certificate
    is valid for 127.0.0.1, not <ip>".

  -ca=<path>
    The CA certificate. Default = berth-agent-ca.pem

  -key=<path>
    The CA key. Default = berth-agent-ca-key.pem
`,
	run: runTLSCertCreate,
}

func runTLSCertCreate(_ context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	var (
		srv, client, cli bool
		dnsNames, ips    stringsFlag
		caFile, keyFile  string
	)
	fs.BoolVar(&srv, "server", false, "")
	fs.BoolVar(&client, "client", false, "")
	fs.BoolVar(&cli, "cli", false, "")
	fs.Var(&dnsNames, "additional-dnsname", "")
	fs.Var(&ips, "additional-ipaddress", "")
	fs.StringVar(&caFile, "ca", caCertFile, "")
	fs.StringVar(&keyFile, "key", caKeyFile, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	var roles []tlsutil.Role
	for role, on := range map[tlsutil.Role]bool{tlsutil.RoleServer: srv, tlsutil.RoleClient: client, tlsutil.RoleCLI: cli} {
		if on {
			roles = append(roles, role)
		}
	}
	if len(roles) != 1 {
		return m.usageError("give exactly one of -server, -client or -cli")
	}
	var extraIPs []net.IP
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return m.usageError("-additional-ipaddress %q is not an IP address", s)
		}
		extraIPs = append(extraIPs, ip)
	}

	ca, err := readCA(caFile, keyFile)
	if err != nil {
		return m.fail("%v", err)
	}
	certPEM, keyPEM, err := tlsutil.GenerateCert(roles[0], ca, dnsNames, extraIPs)
	if err != nil {
		return m.fail("create certificate: %v", err)
	}
	certFile, keyOut := certFileNames(roles[0])
	if err := writeNew(certFile, certPEM, 0o644); err != nil {
		return m.fail("%v", err)
	}
	label := roleLabel(roles[0])
	fmt.Fprintf(m.stdout, "==> %s certificate saved to: %s\n", label, certFile)
	if err := writeNew(keyOut, keyPEM, 0o600); err != nil {
		return m.fail("%v", err)
	}
	fmt.Fprintf(m.stdout, "==> %s key saved to: %s\n", label, keyOut)
	return exitOK
}

// readCA reads the CA's certificate and key files.
func readCA(certFile, keyFile string) (*tlsutil.CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w; run `berth tls ca create` first, or give -ca", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w; give the CA's key with -key", err)
	}
	ca, err := tlsutil.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA %s and key %s: %w", certFile, keyFile, err)
	}
	return ca, nil
}

// certFileNames are the first global-ROLE-berth-N.pem and -key.pem that
// do not exist yet.
func certFileNames(role tlsutil.Role) (cert, key string) {
	for n := 0; ; n++ {
		base := "global-" + string(role) + "-berth-" + strconv.Itoa(n)
		cert, key = base+".pem", base+"-key.pem"
		if !exists(cert) && !exists(key) {
			return cert, key
		}
	}
}

func roleLabel(role tlsutil.Role) string {
	switch role {
	case tlsutil.RoleServer:
		return "Server"
	case tlsutil.RoleClient:
		return "Client"
	}
	return "CLI"
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// writeNew writes data to a file that must not exist yet, with mode perm.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; move it away first", path)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
