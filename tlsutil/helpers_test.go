package tlsutil

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// testCA makes a CA and writes its certificate to dir/ca.pem.
func testCA(t *testing.T, dir string) (*CA, string) {
	t.Helper()
	ca, err := GenerateCA()
	must.NoError(t, err)
	path := filepath.Join(dir, "ca.pem")
	must.NoError(t, os.WriteFile(path, ca.CertPEM, 0o600))
	return ca, path
}

// testConfig writes a role certificate signed by ca into dir as
// NAME.pem and NAME-key.pem and returns a Config naming them.
func testConfig(t *testing.T, dir, name string, role Role, ca *CA, caFile string) Config {
	t.Helper()
	certPEM, keyPEM, err := GenerateCert(role, ca, nil, nil)
	must.NoError(t, err)
	cfg := Config{
		EnableRPC: true, EnableHTTP: true, CAFile: caFile,
		CertFile: filepath.Join(dir, name+".pem"), KeyFile: filepath.Join(dir, name+"-key.pem"),
		VerifyServerHostname: true, VerifyHTTPSClient: true,
	}
	must.NoError(t, os.WriteFile(cfg.CertFile, certPEM, 0o600))
	must.NoError(t, os.WriteFile(cfg.KeyFile, keyPEM, 0o600))
	return cfg
}

func testConfigurator(t *testing.T, cfg Config) *Configurator {
	t.Helper()
	c, err := NewConfigurator(cfg)
	must.NoError(t, err)
	return c
}

// handshake runs a TLS handshake over TCP on 127.0.0.1 between a client
// with cc and a server with sc. It returns the server's view of the
// connection and the client's and server's handshake errors. (In TLS 1.3
// the client may finish before the server refuses its certificate: the
// server's error is the one that says so.)
func handshake(t *testing.T, cc, sc *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type result struct {
		cs  tls.ConnectionState
		err error
	}
	srvDone := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			srvDone <- result{err: err}
			return
		}
		defer c.Close()
		srv := tls.Server(c, sc)
		err = srv.HandshakeContext(ctx)
		srvDone <- result{srv.ConnectionState(), err}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	must.NoError(t, err)
	defer raw.Close()
	cliErr := tls.Client(raw, cc).HandshakeContext(ctx)
	r := <-srvDone
	return r.cs, cliErr, r.err
}
