package main_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// secureWorld is three server processes and a client process, all with
// mutual TLS, gossip encryption and ACLs, their certificates made by the
// berth CLI itself.
type secureWorld struct {
	t       *testing.T
	bin     string
	pki     string // the CA, certificates and keys, as `berth tls` names them
	rogue   string // a CA of its own, and a client certificate it signed
	key     string // the gossip key
	servers []*agentProc
	mgmt    string
}

// cliIn runs a CLI command that must succeed in dir.
func cliIn(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("berth %s: %s", strings.Join(args, " "), out))
	return string(out)
}

// tlsHCL is the agent config of a certificate pair in dir.
func tlsHCL(dir, cert, key string) string {
	return fmt.Sprintf(`
acl {
  enabled = true
}
tls {
  http                   = true
  rpc                    = true
  ca_file                = %q
  cert_file              = %q
  key_file               = %q
  verify_server_hostname = true
  verify_https_client    = true
}
`, filepath.Join(dir, "berth-agent-ca.pem"), filepath.Join(dir, cert), filepath.Join(dir, key))
}

func newSecureWorld(t *testing.T) *secureWorld {
	t.Helper()
	w := &secureWorld{t: t, bin: buildBerth(t), pki: t.TempDir(), rogue: t.TempDir()}
	cliIn(t, w.bin, w.pki, "tls", "ca", "create")
	for _, kind := range []string{"-server", "-client", "-cli"} {
		cliIn(t, w.bin, w.pki, "tls", "cert", "create", kind)
	}
	cliIn(t, w.bin, w.rogue, "tls", "ca", "create")
	cliIn(t, w.bin, w.rogue, "tls", "cert", "create", "-client")
	w.key = strings.TrimSpace(cliIn(t, w.bin, w.pki, "operator", "gossip", "keygen"))

	cfg := writeSpec(t, "server.hcl", tlsHCL(w.pki, "global-server-berth-0.pem", "global-server-berth-0-key.pem")+
		fmt.Sprintf("server {\n  encrypt = %q\n}\n", w.key))
	ports := testlog.FreePorts(t, "127.0.0.1", 9)
	for i := 0; i < 3; i++ {
		a := &agentProc{name: fmt.Sprintf("s%d", i), dataDir: t.TempDir(),
			httpPort: ports[3*i], rpcPort: ports[3*i+1], serfPort: ports[3*i+2]}
		join := ""
		if i > 0 {
			join = "127.0.0.1:" + strconv.Itoa(w.servers[0].serfPort)
		}
		startAgent(t, w.bin, a, join, "-config", cfg)
		w.servers = append(w.servers, a)
	}
	waitUntil(t, 60*time.Second, "a leader every server names, over HTTPS", func() bool {
		first := w.leaderOf(w.servers[0])
		for _, a := range w.servers[1:] {
			if w.leaderOf(a) != first {
				return false
			}
		}
		return first != ""
	})
	out, stderr, code := w.cli("", "acl", "bootstrap")
	must.Zero(t, code, must.Sprint(out, stderr))
	w.mgmt = secretOf(t, out)
	return w
}

var secretLine = regexp.MustCompile(`(?m)^Secret ID\s+=\s+(\S+)$`)

func secretOf(t *testing.T, out string) string {
	t.Helper()
	m := secretLine.FindStringSubmatch(out)
	must.SliceLen(t, 2, m, must.Sprintf("no Secret ID in:\n%s", out))
	return m[1]
}

// cli runs the CLI against the first server over HTTPS with the CLI's
// certificate and token (none when empty).
func (w *secureWorld) cli(token string, args ...string) (string, string, int) {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(os.Environ(),
		"BERTH_ADDR=https://127.0.0.1:"+strconv.Itoa(w.servers[0].httpPort),
		"BERTH_CACERT="+filepath.Join(w.pki, "berth-agent-ca.pem"),
		"BERTH_CLIENT_CERT="+filepath.Join(w.pki, "global-cli-berth-0.pem"),
		"BERTH_CLIENT_KEY="+filepath.Join(w.pki, "global-cli-berth-0-key.pem"),
		"BERTH_TOKEN="+token)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		must.NoError(w.t, err)
	}
	return stdout.String(), stderr.String(), code
}

// ok runs a CLI command with the management token that must succeed.
func (w *secureWorld) ok(args ...string) string {
	w.t.Helper()
	out, stderr, code := w.cli(w.mgmt, args...)
	must.Zero(w.t, code, must.Sprintf("berth %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, stderr))
	return out
}

// leaderOf asks a server over HTTPS, with the CLI's certificate, who
// leads; "" on any failure.
func (w *secureWorld) leaderOf(a *agentProc) string {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(w.pki, "berth-agent-ca.pem"))
	must.NoError(w.t, err)
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(filepath.Join(w.pki, "global-cli-berth-0.pem"), filepath.Join(w.pki, "global-cli-berth-0-key.pem"))
	must.NoError(w.t, err)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	return leaderAt(hc, "https://127.0.0.1:"+strconv.Itoa(a.httpPort))
}

// serversLogged waits until some server's log has a line with every one
// of parts.
func (w *secureWorld) serversLogged(what string, parts ...string) {
	w.t.Helper()
	waitUntil(w.t, 30*time.Second, what, func() bool {
		for _, a := range w.servers {
			for _, line := range strings.Split(a.log.String(), "\n") {
				all := true
				for _, p := range parts {
					all = all && strings.Contains(line, p)
				}
				if all {
					return true
				}
			}
		}
		return false
	})
}

// TestProcess_SecureCluster: three servers and a client with mutual TLS,
// gossip encryption and ACLs. The CLI with the management token runs the
// whole volume and job workflow; with no token every write is refused
// (403, naming the capability); a client with a certificate of another CA
// is refused; a client certificate cannot join as a server; one client's
// secret cannot update another node.
func TestProcess_SecureCluster(t *testing.T) {
	testlog.NeedRoot(t, "the plugin task mounts volumes")
	w := newSecureWorld(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot := t.TempDir()
	c1 := startWorkloadClientWith(t, w.bin, w.servers, "c1", "127.0.0.1",
		tlsHCL(w.pki, "global-client-berth-0.pem", "global-client-berth-0-key.pem"))
	waitUntil(t, 30*time.Second, "c1 ready", func() bool {
		out, _, code := w.cli(w.mgmt, "node", "status")
		return code == 0 && strings.Contains(out, " c1 ") && strings.Contains(out, "ready")
	})

	// The whole workflow, with the management token.
	start := time.Now()
	w.ok("job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath")))
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		out, _, code := w.cli(w.mgmt, "plugin", "status", "-json", "hostpath")
		var p structs.CSIPlugin
		return code == 0 && json.Unmarshal([]byte(out), &p) == nil && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})
	w.ok("volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", `secrets {
  token = "hunter2-kept-in-raft"
}`)))
	w.ok("job", "run", writeSpec(t, "writer.hcl", volumeJob("writer", 1, "data", "single-node-writer",
		`id -un > /data/who; exec sleep 1000`)))
	vol := func() *structs.CSIVolume {
		var v structs.CSIVolume
		must.NoError(t, json.Unmarshal([]byte(w.ok("volume", "status", "-json", "data")), &v))
		return &v
	}
	must.MapLen(t, 1, vol().WriteClaims)
	waitUntil(t, 20*time.Second, "the writer wrote its user into the volume", func() bool {
		b, err := os.ReadFile(filepath.Join(pluginRoot, "c1", "volumes", vol().ExternalID, "who"))
		return err == nil && strings.TrimSpace(string(b)) == "nobody"
	})
	w.ok("job", "stop", "writer")
	waitUntil(t, 30*time.Second, "the writer's claim freed", func() bool {
		v := vol()
		return len(v.WriteClaims) == 0 && len(v.PastClaims) == 0
	})
	t.Logf("figure: secure workflow (plugin job, volume create, writer run and stop, claim freed): %s", time.Since(start).Round(time.Millisecond))

	// The secret is in no server's files in clear: raft.db, snapshots,
	// the keystore.
	for _, a := range w.servers {
		must.NoError(t, filepath.Walk(a.dataDir, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			must.False(t, strings.Contains(string(b), "hunter2-kept-in-raft"), must.Sprintf("volume secret in clear in %s", path))
			return nil
		}))
	}

	// No token: every write is refused, naming what is missing.
	other := writeSpec(t, "other.hcl", volumeSpec("other", ""))
	for _, args := range [][]string{
		{"volume", "register", writeSpec(t, "registered.hcl", volumeSpec("registered", `external_id = "vol-0011223344556677"`))},
		{"volume", "create", other},
		{"volume", "delete", "data"},
		{"volume", "deregister", "data"},
		{"volume", "detach", "data", c1.name},
		{"volume", "snapshot", "create", "data"},
		{"job", "run", writeSpec(t, "anon.hcl", volumeJob("anon", 1, "data", "single-node-writer", "true"))},
		{"job", "stop", "hostpath-plugin"},
		{"acl", "token", "create", "-name", "x", "-type", "management"},
		{"acl", "policy", "apply", "p", writeSpec(t, "p.hcl", "node {\n  policy = \"write\"\n}\n")},
		{"operator", "root", "keyring", "rotate"},
		{"node", "status"},
	} {
		out, stderr, code := w.cli("", args...)
		must.EqOp(t, 1, code, must.Sprintf("anonymous berth %s: %s %s", strings.Join(args, " "), out, stderr))
		must.StrContains(t, stderr, "Permission denied", must.Sprintf("anonymous berth %s", strings.Join(args, " ")))
	}
	must.MapLen(t, 0, vol().WriteClaims)

	// A client whose certificate another CA signed is refused, and logged.
	startWorkloadClientWith(t, w.bin, w.servers, "rogue", "127.0.0.1",
		tlsHCL(w.rogue, "global-client-berth-0.pem", "global-client-berth-0-key.pem"))
	w.serversLogged("a server to refuse the rogue client's handshake", "refusing connection: tls handshake failed", "remote_addr=127.0.0.1:")
	out := w.ok("node", "status")
	must.StrNotContains(t, out, "rogue")

	// A client certificate cannot join as a server: it gossips (it has the
	// key) but never becomes a raft peer.
	ports := testlog.FreePorts(t, "127.0.0.1", 3)
	rogueServer := &agentProc{name: "rogue-server", dataDir: t.TempDir(), httpPort: ports[0], rpcPort: ports[1], serfPort: ports[2]}
	startAgent(t, w.bin, rogueServer, "127.0.0.1:"+strconv.Itoa(w.servers[0].serfPort), "-config",
		writeSpec(t, "rogue-server.hcl", tlsHCL(w.pki, "global-client-berth-0.pem", "global-client-berth-0-key.pem")+
			fmt.Sprintf("server {\n  encrypt = %q\n}\n", w.key)))
	w.serversLogged("the leader to refuse the rogue server as a raft peer", "not adding gossip member to raft", "rogue-server")
	peers := w.ok("operator", "raft", "list-peers")
	must.StrNotContains(t, peers, "rogue-server")
	must.EqOp(t, 4, len(strings.Split(strings.TrimSpace(peers), "\n")), must.Sprint(peers)) // header and three servers

	// One client's secret cannot update another node.
	w.nodeSecretIsItsOwn(c1)
}

// nodeSecretIsItsOwn registers an intruder node with a secret of its own,
// over mutual TLS with the client certificate, and has it try to mark c1
// down: refused. c1's own secret may.
func (w *secureWorld) nodeSecretIsItsOwn(c1 *clientProc) {
	t := w.t
	conf, err := tlsutil.NewConfigurator(tlsutil.Config{EnableRPC: true, VerifyServerHostname: true,
		CAFile:   filepath.Join(w.pki, "berth-agent-ca.pem"),
		CertFile: filepath.Join(w.pki, "global-client-berth-0.pem"),
		KeyFile:  filepath.Join(w.pki, "global-client-berth-0-key.pem")})
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(method string, args, reply any) error {
		conn, err := rpc.Dial(ctx, w.servers[1].rpcAddr(), rpc.TypeRPC, rpc.WithDialTLS(conf.OutgoingRPC))
		must.NoError(t, err)
		defer conn.Close()
		return rpc.CallConn(ctx, conn, method, args, reply)
	}

	// Plain text is refused, and logged with the peer's address.
	plain, err := rpc.Dial(ctx, w.servers[1].rpcAddr(), rpc.TypeRPC)
	must.NoError(t, err)
	err = rpc.CallConn(ctx, plain, "Status.Leader", &structs.GenericRequest{}, new(string))
	_ = plain.Close()
	must.Error(t, err)
	w.serversLogged("a server to refuse plain text", "refusing plain-text connection; tls.rpc is on", "remote_addr=127.0.0.1:")

	var nodes structs.NodeListResponse
	must.NoError(t, call("Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: w.mgmt}}, &nodes))
	var c1ID string
	for _, n := range nodes.Nodes {
		if n.Name == c1.name {
			c1ID = n.ID
		}
	}
	must.NotEq(t, "", c1ID)

	intruder := "7b2e4c1d-9a8f-4e3b-b6d5-0c1f2e3d4a5b"
	must.NoError(t, call("Node.Register", &structs.NodeRegisterRequest{
		Node:         &structs.Node{ID: "3c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f", Name: "intruder", Datacenter: "dc1", Status: structs.NodeStatusReady},
		WriteRequest: structs.WriteRequest{AuthToken: intruder}}, &structs.NodeUpdateResponse{}))
	down := func(secret string) error {
		return call("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: c1ID, Status: structs.NodeStatusDown,
			WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.NodeUpdateResponse{})
	}
	err = down(intruder)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrNotContains(t, err.Error(), intruder)
	var c1Node structs.Node // c1's own row: the intruder's is "ready" too
	must.NoError(t, json.Unmarshal([]byte(w.ok("node", "status", "-json", c1ID)), &c1Node))
	must.EqOp(t, structs.NodeStatusReady, c1Node.Status)

	secret, err := os.ReadFile(filepath.Join(c1.dataDir, "client", "node-secret"))
	must.NoError(t, err)
	must.NoError(t, call("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: c1ID, Status: structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{AuthToken: strings.TrimSpace(string(secret))}}, &structs.NodeUpdateResponse{}),
		must.Sprint("c1's own secret may update c1"))
}
