package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

const testGossipKey = "aGVsbG8gYmVydGggZ29zc2lwIGtleSAzMiBieXRlcyE=" // 32 bytes

func writeConfig(t *testing.T, dir, src string) string {
	t.Helper()
	path := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

func TestParseConfig_SecurityBlocks(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, fmt.Sprintf(`
acl { enabled = true }
tls {
  http                   = true
  rpc                    = true
  ca_file                = "berth-agent-ca.pem"
  cert_file              = "certs/global-server-berth-0.pem"
  key_file               = "/etc/berth/global-server-berth-0-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
}
server {
  enabled = true
  encrypt = %q
}
client { allow_root_tasks = true }
`, testGossipKey))
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	must.True(t, cfg.ACL.Enabled)
	must.True(t, cfg.Client.AllowRootTasks)
	key, err := base64.StdEncoding.DecodeString(testGossipKey)
	must.NoError(t, err)
	must.Eq(t, key, cfg.encryptKey)
	must.Eq(t, &tlsutil.Config{
		EnableRPC: true, EnableHTTP: true,
		CAFile:               filepath.Join(dir, "berth-agent-ca.pem"),
		CertFile:             filepath.Join(dir, "certs", "global-server-berth-0.pem"),
		KeyFile:              "/etc/berth/global-server-berth-0-key.pem",
		VerifyServerHostname: true, VerifyHTTPSClient: true,
	}, cfg.rpcTLS(), must.Sprint("relative paths are the config file's directory's"))
}

func TestParseConfig_SecurityErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"rpc without files", "server { enabled = true }\ntls {\n  rpc = true\n}\n",
			[]string{"tls: ca_file is required when tls.rpc is on", "tls: cert_file is required", "tls: key_file is required"}},
		{"http without key", "server { enabled = true }\ntls {\n  http      = true\n  ca_file   = \"ca.pem\"\n  cert_file = \"c.pem\"\n}\n",
			[]string{"tls: key_file is required when tls.http is on"}},
		{"verify_https_client without http", "server { enabled = true }\ntls { verify_https_client = true }\n",
			[]string{"verify_https_client needs http = true"}},
		{"gossip key not base64", "server {\n  enabled = true\n  encrypt = \"not base64!\"\n}\n",
			[]string{"server.encrypt must be 32 bytes base64; make one with `berth operator gossip keygen`"}},
		{"gossip key of 16 bytes", "server {\n  enabled = true\n  encrypt = \"" + base64.StdEncoding.EncodeToString(make([]byte, 16)) + "\"\n}\n",
			[]string{"server.encrypt must be 32 bytes base64"}},
		{"misspelt tls field", "server { enabled = true }\ntls {\n  rpc = true\n  verify_server_hostnam = true\n}\n",
			[]string{"agent.hcl:4", `Did you mean "verify_server_hostname"?`}},
		{"acl enabled not a bool", "server { enabled = true }\nacl { enabled = \"sometimes\" }\n",
			[]string{"agent.hcl:2", "a bool is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, t.TempDir(), tc.src)
			_, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
			must.ErrorContains(t, err, "agent config: "+path)
			for _, w := range tc.want {
				must.ErrorContains(t, err, w)
			}
		})
	}
}

func TestParseConfig_DevTurnsSecurityOff(t *testing.T) {
	path := writeConfig(t, t.TempDir(), fmt.Sprintf(`
acl { enabled = true }
tls {
  rpc       = true
  ca_file   = "ca.pem"
  cert_file = "c.pem"
  key_file  = "k.pem"
}
server { encrypt = %q }
`, testGossipKey))
	cfg, err := parseConfig([]string{"-dev", "-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	must.False(t, cfg.ACL.Enabled)
	must.Nil(t, cfg.rpcTLS())
	must.False(t, cfg.TLS.HTTP)
	must.Nil(t, cfg.encryptKey)
	must.True(t, cfg.Client.AllowRootTasks, must.Sprint("-dev lets tasks run as root"))
}

// TestRun_TLS: a server and client agent with mutual TLS on RPC and HTTPS
// (client certificates required) and gossip encryption: its client
// registers over TLS, the CLI's certificate reaches the API, plain HTTP
// does not, and SIGHUP reloads the certificates (a bad file keeps them).
func TestRun_TLS(t *testing.T) {
	// The CA, the server's and the CLI's certificates, and the config that
	// names them relative to its own dir.
	pki := tlsutiltest.NewPKI(t)
	dir := pki.Dir
	serverCert := pki.Cert(t, "global-server-berth-0", tlsutil.RoleServer)
	cliCert := pki.Cert(t, "global-cli-berth-0", tlsutil.RoleCLI)
	httpPort := freePort(t)
	path := writeConfig(t, dir, fmt.Sprintf(`
name     = "secure"
data_dir = %q
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
  encrypt          = %q
}
client { enabled = true }
tls {
  http                   = true
  rpc                    = true
  ca_file                = "ca.pem"
  cert_file              = "global-server-berth-0.pem"
  key_file               = "global-server-berth-0-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
}
`, filepath.Join(dir, "data"), httpPort, freePort(t), freePort(t), testGossipKey))
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Recorder{}
	hup := make(chan os.Signal, 1)
	exit := make(chan error, 1)
	go func() { exit <- run(ctx, cfg, logs, hup) }()

	address := "https://127.0.0.1:" + strconv.Itoa(httpPort)
	cli, err := api.NewClient(api.Config{Address: address, TLS: api.TLSConfig{
		CACert:     pki.CAFile,
		ClientCert: cliCert.CertFile,
		ClientKey:  cliCert.KeyFile,
	}})
	must.NoError(t, err)
	waitFor(t, 30*time.Second, "the agent's own node ready over TLS", func() bool {
		nodes, _, err := cli.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == structs.NodeStatusReady
	}, logs)
	must.StrContains(t, logs.String(), "tls_rpc=true gossip_encrypted=true")

	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/v1/nodes")
	must.NoError(t, err)
	_ = resp.Body.Close()
	must.EqOp(t, http.StatusBadRequest, resp.StatusCode, must.Sprint("plain HTTP is refused: Go's answer to HTTP on an HTTPS port"))
	noCert, err := api.NewClient(api.Config{Address: address, TLS: api.TLSConfig{CACert: pki.CAFile}})
	must.NoError(t, err)
	_, _, err = noCert.Nodes().List(nil)
	must.ErrorContains(t, err, "certificate required")

	// served is the serial of the certificate a new HTTPS connection sees.
	served := func() *big.Int {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(httpPort), &tls.Config{InsecureSkipVerify: true})
		must.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	first := served()
	pki.Rewrite(t, serverCert, tlsutil.RoleServer)
	hup <- syscall.SIGHUP
	waitFor(t, 30*time.Second, "the reload", func() bool {
		return strings.Contains(logs.String(), "sighup: tls certificates reloaded")
	}, logs)
	second := served()
	must.NotEq(t, first, second)

	must.NoError(t, os.WriteFile(serverCert.KeyFile, []byte("garbage"), 0o600))
	hup <- syscall.SIGHUP
	waitFor(t, 30*time.Second, "the failed reload", func() bool {
		return strings.Contains(logs.String(), "sighup: tls reload failed; keeping the certificates in use")
	}, logs)
	must.Eq(t, second, served())
	_, _, err = cli.Nodes().List(nil)
	must.NoError(t, err, must.Sprint("the agent still serves"))

	cancel()
	select {
	case err := <-exit:
		must.NoError(t, err, must.Sprint(logs.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop after its context ended")
	}
}

// TestParseConfig_ACLNeedsTLSOnServers: a server with ACLs must have
// mutual TLS (the servers share the root key over it) with
// verify_server_hostname (whoever dials a server checks it is one); the
// error names both and what to set. A client's acl block alone is fine,
// and -server from the flags counts.
func TestParseConfig_ACLNeedsTLSOnServers(t *testing.T) {
	const files = "  ca_file   = \"ca.pem\"\n  cert_file = \"c.pem\"\n  key_file  = \"k.pem\"\n"
	cases := []struct {
		name string
		tls  string
		set  string // what the error says to set; "" for valid
	}{
		{"no tls block", "", "set rpc = true and verify_server_hostname = true in the tls block"},
		{"https only", "tls {\n  http = true\n" + files + "}\n", "set rpc = true and verify_server_hostname = true in the tls block"},
		{"rpc without verify_server_hostname", "tls {\n  rpc = true\n" + files + "}\n", "set verify_server_hostname = true in the tls block"},
		{"rpc and verify_server_hostname", "tls {\n  rpc = true\n  verify_server_hostname = true\n" + files + "}\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, t.TempDir(), "acl {\n  enabled = true\n}\n"+tc.tls)
			cfg, err := parseConfig([]string{"-server", "-config", path}, &bytes.Buffer{})
			if tc.set == "" {
				must.NoError(t, err)
				must.True(t, cfg.ACL.Enabled)
				return
			}
			must.ErrorContains(t, err, "acl { enabled = true } on a server needs tls { rpc = true } with verify_server_hostname = true")
			must.ErrorContains(t, err, tc.set)

			cfg, err = parseConfig([]string{"-client", "-config", path}, &bytes.Buffer{})
			must.NoError(t, err, must.Sprint("a client needs neither"))
			must.True(t, cfg.ACL.Enabled)
		})
	}
}
