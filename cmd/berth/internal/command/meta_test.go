package command

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/tlsutil"
)

// runCLIEnv runs the CLI in-process with env as its environment.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	app := &App{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code := app.Run(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

// tokenServer answers GET /v1/nodes with no nodes and remembers the token
// of the last request.
type tokenServer struct {
	mu    sync.Mutex
	token string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.token = r.Header.Get("X-Berth-Token")
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "[]")
}

func (s *tokenServer) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

func TestMeta_Token_FlagBeatsEnv(t *testing.T) {
	ts := &tokenServer{}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"from the environment", map[string]string{"BERTH_TOKEN": "env-token"}, []string{"node", "status"}, "env-token"},
		{"flag after the command", map[string]string{"BERTH_TOKEN": "env-token"}, []string{"node", "status", "-token", "flag-token"}, "flag-token"},
		{"flag before the command", map[string]string{"BERTH_TOKEN": "env-token"}, []string{"-token=flag-token", "node", "status"}, "flag-token"},
		{"none", nil, []string{"node", "status"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"BERTH_ADDR": srv.URL}
			for k, v := range tc.env {
				env[k] = v
			}
			r := runCLIEnv(t, env, tc.args...)
			must.EqOp(t, exitOK, r.code, must.Sprint(r.stderr))
			must.EqOp(t, tc.want, ts.last())
		})
	}
}

// httpsAgent is an HTTPS server with a server certificate of a new CA that
// requires a client certificate of it, and the files of the CA and of a
// CLI certificate in dir.
func httpsAgent(t *testing.T) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	ca, err := tlsutil.GenerateCA()
	must.NoError(t, err)
	write := func(name string, b []byte) {
		must.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	write("ca.pem", ca.CertPEM)
	certPEM, keyPEM, err := tlsutil.GenerateCert(tlsutil.RoleCLI, ca, nil, nil)
	must.NoError(t, err)
	write("cli.pem", certPEM)
	write("cli-key.pem", keyPEM)
	srvCert, srvKey, err := tlsutil.GenerateCert(tlsutil.RoleServer, ca, nil, nil)
	must.NoError(t, err)
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	must.NoError(t, err)

	srv := httptest.NewUnstartedServer(&tokenServer{})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, dir
}

func TestMeta_TLSOptions(t *testing.T) {
	url, dir := httpsAgent(t)
	ca, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cli.pem"), filepath.Join(dir, "cli-key.pem")
	flags := []string{"-ca-cert", ca, "-client-cert", cert, "-client-key", key}
	env := map[string]string{"BERTH_ADDR": url, "BERTH_CACERT": ca, "BERTH_CLIENT_CERT": cert, "BERTH_CLIENT_KEY": key}

	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"flags", map[string]string{"BERTH_ADDR": url}, append([]string{"node", "status"}, flags...), exitOK, ""},
		{"flags before the command", map[string]string{"BERTH_ADDR": url}, append(append([]string{}, flags...), "node", "status"), exitOK, ""},
		{"environment", env, []string{"node", "status"}, exitOK, ""},
		{"server name in the certificate", env, []string{"node", "status", "-tls-server-name", "server.global.berth"}, exitOK, ""},
		{"server name from the environment, not in the certificate",
			map[string]string{"BERTH_ADDR": url, "BERTH_CACERT": ca, "BERTH_CLIENT_CERT": cert, "BERTH_CLIENT_KEY": key,
				"BERTH_TLS_SERVER_NAME": "client.global.berth"},
			[]string{"node", "status"}, exitError, "client.global.berth"},
		{"no client certificate", map[string]string{"BERTH_ADDR": url}, []string{"node", "status", "-ca-cert", ca}, exitError, "certificate required"},
		{"flag beats the environment", env, []string{"node", "status", "-client-key", filepath.Join(dir, "nope.pem")}, exitError, "nope.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLIEnv(t, tc.env, tc.args...)
			mustExit(t, r, tc.code, tc.stderr)
		})
	}
}
