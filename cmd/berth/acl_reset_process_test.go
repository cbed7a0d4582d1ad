package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/shoenig/test/must"
)

// resetRefusal is the refusal of a second bootstrap: the reset index and
// the leader's name.
var resetRefusal = regexp.MustCompile(`ACL bootstrap already done \(reset index: (\d+)\).* the leader, server (\S+) `)

// TestProcess_ACLBootstrapReset: the lost-management-token procedure on
// three TLS+ACL server processes, through the CLI: a second bootstrap is
// refused naming the reset index and the leader; a reset file on the
// leader with another index is refused naming the one to write; with the
// right one a new management token is made, the first still works, and
// the same file cannot be used again.
func TestProcess_ACLBootstrapReset(t *testing.T) {
	w := newSecureWorld(t)
	first := w.mgmt

	// A cluster secured for where it listens: no start warning.
	for _, a := range w.servers {
		for _, line := range strings.Split(a.log.String(), "\n") {
			if strings.Contains(line, "[WARN]") && (strings.Contains(line, "ACLs are") ||
				strings.Contains(line, "plain") || strings.Contains(line, "gossip is not encrypted")) {
				t.Errorf("server %s warned at start: %s", a.name, line)
			}
		}
	}

	bootstrap := func() (string, string, int) { return w.cli("", "acl", "bootstrap") }
	out, stderr, code := bootstrap()
	must.EqOp(t, 1, code, must.Sprint(out, stderr))
	m := resetRefusal.FindStringSubmatch(stderr)
	must.SliceLen(t, 3, m, must.Sprintf("no reset index and leader in: %s", stderr))
	reset, err := strconv.ParseUint(m[1], 10, 64)
	must.NoError(t, err)
	var leader *agentProc
	for _, a := range w.servers {
		if a.name == m[2] {
			leader = a
		}
	}
	must.NotNil(t, leader, must.Sprintf("the refusal names no server of the cluster: %s", stderr))
	resetFile := filepath.Join(leader.dataDir, "server", "acl-bootstrap-reset")
	writeReset := func(content string) {
		must.NoError(t, os.WriteFile(resetFile, []byte(content), 0o600))
	}

	writeReset(fmt.Sprintf("%d\n", reset+1000))
	out, stderr, code = bootstrap()
	must.EqOp(t, 1, code, must.Sprint(out, stderr))
	must.StrContains(t, stderr, fmt.Sprintf("holds index %d, but the reset index is %d; write %d into it", reset+1000, reset, reset))

	writeReset(fmt.Sprintf("%d\n", reset))
	start := time.Now()
	out, stderr, code = bootstrap()
	must.Zero(t, code, must.Sprint(out, stderr))
	t.Logf("figure: acl bootstrap after a reset: %s", time.Since(start).Round(time.Millisecond))
	second := secretOf(t, out)
	must.NotEq(t, first, second)
	leaderLogged := func() bool {
		return strings.Contains(leader.log.String(), "acl bootstrap reset: a new management token was made")
	}
	must.True(t, leaderLogged(), must.Sprint("the leader logs the reset"))

	// Both management tokens work.
	for _, token := range []string{first, second} {
		out, stderr, code := w.cli(token, "acl", "token", "list")
		must.Zero(t, code, must.Sprint(out, stderr))
		must.EqOp(t, 2, strings.Count(out, "Bootstrap Token"), must.Sprint(out))
	}

	// The same file again: the reset index moved on.
	out, stderr, code = bootstrap()
	must.EqOp(t, 1, code, must.Sprint(out, stderr))
	must.StrContains(t, stderr, fmt.Sprintf("holds index %d, but the reset index is ", reset))
	must.StrNotContains(t, stderr, fmt.Sprintf("reset index is %d;", reset))
}

// TestProcess_AgentStartWarnings: a server process with ACLs over plain
// HTTP and no gossip key says both at start, before it runs.
func TestProcess_AgentStartWarnings(t *testing.T) {
	bin := buildBerth(t)
	pki := t.TempDir()
	cliIn(t, bin, pki, "tls", "ca", "create")
	cliIn(t, bin, pki, "tls", "cert", "create", "-server")
	cfg := writeSpec(t, "server.hcl", fmt.Sprintf(`
acl {
  enabled = true
}
tls {
  rpc                    = true
  ca_file                = %q
  cert_file              = %q
  key_file               = %q
  verify_server_hostname = true
}
`, filepath.Join(pki, "berth-agent-ca.pem"), filepath.Join(pki, "global-server-berth-0.pem"), filepath.Join(pki, "global-server-berth-0-key.pem")))
	ports := testlog.FreePorts(t, "127.0.0.1", 3)
	a := &agentProc{name: "s0", dataDir: t.TempDir(), httpPort: ports[0], rpcPort: ports[1], serfPort: ports[2]}
	startAgent(t, bin, a, "", "-config", cfg, "-bootstrap-expect", "1")
	waitUntil(t, 30*time.Second, "the agent running", func() bool { return strings.Contains(a.log.String(), "agent running") })
	log := a.log.String()
	running := strings.Index(log, "agent running")
	for _, want := range []string{
		"[WARN]  berth: ACLs are on but the HTTP API 127.0.0.1:" + strconv.Itoa(a.httpPort) + " is plain HTTP: tokens cross plain HTTP",
		"[WARN]  berth: gossip is not encrypted: server { encrypt } is not set",
	} {
		must.StrContains(t, log, want)
		must.Less(t, running, strings.Index(log, want), must.Sprint("warned before the agent runs"))
	}
}
