package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// agentProc is one `berth agent -server` process.
type agentProc struct {
	name                        string
	httpPort, rpcPort, serfPort int
	dataDir                     string
	cmd                         *exec.Cmd
	log                         *lockedBuffer // read while the agent runs
}

func (a *agentProc) httpAddr() string { return "http://127.0.0.1:" + strconv.Itoa(a.httpPort) }
func (a *agentProc) rpcAddr() string  { return "127.0.0.1:" + strconv.Itoa(a.rpcPort) }

// buildBerth builds the berth binary for a process test; under -short it
// skips the test, as every process test does.
func buildBerth(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: process tests build berth and start agents")
	}
	bin := filepath.Join(t.TempDir(), "berth")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	must.NoError(t, err, must.Sprintf("go build: %s", out))
	return bin
}

// startAgent starts a server agent; extra arguments (a -config) come after
// the usual ones.
func startAgent(t *testing.T, bin string, a *agentProc, join string, extra ...string) {
	t.Helper()
	args := []string{"agent", "-server", "-node-name", a.name, "-data-dir", a.dataDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(a.httpPort), "-rpc-port", strconv.Itoa(a.rpcPort),
		"-serf-port", strconv.Itoa(a.serfPort), "-bootstrap-expect", "3"}
	if join != "" {
		args = append(args, "-join", join)
	}
	args = append(args, extra...)
	a.log = &lockedBuffer{}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	must.NoError(t, a.cmd.Start())
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			_ = a.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", a.name, a.log.String())
		}
	})
}

// leaderOf asks an agent's HTTP API who leads; "" on any failure.
func leaderOf(a *agentProc) string { return leaderAt(http.DefaultClient, a.httpAddr()) }

// leaderAt asks the HTTP API at addr, with hc, who leads; "" on any
// failure.
func leaderAt(hc *http.Client, addr string) string {
	resp, err := hc.Get(addr + "/v1/status/leader")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var leader string
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&leader) != nil {
		return ""
	}
	return leader
}

// waitLeader waits until every agent given names the same leader, other
// than not (a leader known to be gone).
func waitLeader(t *testing.T, agents []*agentProc, not string, timeout time.Duration) string {
	t.Helper()
	var leader string
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		leader = leaderOf(agents[0])
		agreed := leader != "" && leader != not
		for _, a := range agents[1:] {
			agreed = agreed && leaderOf(a) == leader
		}
		return agreed
	}), wait.Timeout(timeout), wait.Gap(20*time.Millisecond)),
		must.Sprintf("agents did not agree on a leader within %s", timeout))
	return leader
}

// berthCLI runs the CLI against one agent.
func berthCLI(t *testing.T, bin string, a *agentProc, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "BERTH_ADDR="+a.httpAddr())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		must.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestProcess_ThreeServers_VolumeRegisteredAndRead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts three agents")
	}
	bin := buildBerth(t)
	start := time.Now()
	agents, leader := threeServers(t, bin)
	t.Logf("figure: three processes started to agreed leader in %s", time.Since(start).Round(time.Millisecond))

	out, stderr, code := berthCLI(t, bin, agents[1], "operator", "raft", "list-peers")
	must.Zero(t, code, must.Sprint(stderr))
	for _, a := range agents {
		must.StrContains(t, out, a.name)
	}
	must.StrContains(t, out, "leader")

	// A client node registers over msgpack RPC with a plugin in its fingerprint.
	pool := rpc.NewPool(hclog.NewNullLogger(), 4)
	defer pool.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, pool.Call(ctx, agents[2].rpcAddr(), "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("client-1", "hostpath", false, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: "0e9b7d2a-5c1f-4e8b-9a3d-6f2c1b0e7d4a"}, // the node's secret
	}, &nresp))
	must.Eq(t, leader, nresp.LeaderRPCAddr)

	spec := filepath.Join(t.TempDir(), "data.hcl")
	must.NoError(t, os.WriteFile(spec, []byte(`
id          = "data"
name        = "data"
type        = "csi"
plugin_id   = "hostpath"
external_id = "vol-0001"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets { token = "hunter2" }
`), 0o600))
	out, stderr, code = berthCLI(t, bin, agents[0], "volume", "register", spec)
	must.Zero(t, code, must.Sprintf("stdout %s stderr %s", out, stderr))

	out, stderr, code = berthCLI(t, bin, agents[2], "volume", "status", "data")
	must.Zero(t, code, must.Sprint(stderr))
	must.StrContains(t, out, "vol-0001")
	must.StrContains(t, out, "hostpath")
	must.StrNotContains(t, out, "hunter2")

	out, _, code = berthCLI(t, bin, agents[1], "volume", "status", "-json", "data")
	must.Zero(t, code)
	var vol structs.CSIVolume
	must.NoError(t, json.Unmarshal([]byte(out), &vol))
	must.True(t, vol.Schedulable)
	must.Eq(t, "berth-hostpath", vol.Provider)
	must.StrNotContains(t, out, "hunter2")

	out, stderr, code = berthCLI(t, bin, agents[1], "plugin", "status", "hostpath")
	must.Zero(t, code, must.Sprint(stderr))
	must.StrContains(t, out, "client-1")

	// A bad spec fails with its file and line, and writes nothing.
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte("id = \"x\"\nplugin_id = \"hostpath\"\nacess_mode = \"single-node-writer\"\n"), 0o600))
	_, stderr, code = berthCLI(t, bin, agents[0], "volume", "register", bad)
	must.EqOp(t, 1, code)
	must.StrContains(t, stderr, "bad.hcl:3")

	// kill -9 the leader: the two others elect a new one and keep the volume.
	var victim *agentProc
	var rest []*agentProc
	for _, a := range agents {
		if a.rpcAddr() == leader {
			victim = a
		} else {
			rest = append(rest, a)
		}
	}
	must.NotNil(t, victim, must.Sprintf("leader %s is none of the agents", leader))
	killed := time.Now()
	must.NoError(t, victim.cmd.Process.Kill())
	_ = victim.cmd.Wait()
	newLeader := waitLeader(t, rest, leader, 30*time.Second)
	t.Logf("figure: new leader %s %s after kill -9 of %s", newLeader, time.Since(killed).Round(time.Millisecond), victim.name)
	must.NotEq(t, leader, newLeader)
	out, stderr, code = berthCLI(t, bin, rest[0], "volume", "status", "data")
	must.Zero(t, code, must.Sprint(stderr))
	must.StrContains(t, out, "vol-0001")
}
