package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/harness/agentproc"
	"github.com/berth-csi/berth/structs"
)

// The agents' loopback addresses. 127.0.0.21 and .22 are the cmd/berth
// partition tests' (see doc.go).
var (
	serverAddrs = []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}
	clientAddrs = []string{"127.0.0.31", "127.0.0.32"}
)

// PluginID is the ID of the berth-hostpath plugin the clients run.
const PluginID = "hostpath"

// Agent is one berth agent process of the cluster.
type Agent = agentproc.Agent

// Cluster is three server agents and two client agents running
// berth-hostpath as a system job, all real processes on their own
// loopback addresses.
type Cluster struct {
	t          testing.TB
	Bin        string // bin/berth
	Hostpath   string // berth-hostpath
	Servers    []*Agent
	Clients    []*Agent
	PluginRoot string // the plugin instances' volumes, one dir per client
	LogDir     string // one log file per process, kept after the test

	// Retried counts the answers the API clients retried (not applied:
	// Unavailable or NotReady, or a read's lost answer).
	Retried atomic.Int64
}

// StartCluster builds the binaries, starts the servers and the clients,
// runs the plugin job and waits until the plugin is healthy on both
// clients. Everything is torn down by the test's cleanup.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t, PluginRoot: t.TempDir()}
	work := t.TempDir()
	c.Bin = filepath.Join(work, "berth")
	if out, err := exec.Command("go", "build", "-o", c.Bin, "github.com/berth-csi/berth/cmd/berth").CombinedOutput(); err != nil {
		t.Fatalf("chaos: build berth: %v\n%s", err, out)
	}
	c.Hostpath = csitest.HostpathBinary(t)
	logDir, err := os.MkdirTemp("", "berth-chaos-logs-")
	if err != nil {
		t.Fatalf("chaos: log dir: %v", err)
	}
	c.LogDir = logDir
	t.Cleanup(func() {
		if t.Failed() {
			for _, a := range append(append([]*Agent{}, c.Servers...), c.Clients...) {
				t.Logf("--- %s (last 40 lines of %s) ---\n%s", a.Name, a.Proc.LogPath, a.Proc.LogTail(40))
			}
		}
		t.Logf("chaos: process logs kept in %s", logDir)
	})

	c.startServers()
	c.WaitLeader(90 * time.Second)
	for i, addr := range clientAddrs {
		c.Clients = append(c.Clients, agentproc.StartClient(t, c.Bin, c.LogDir, fmt.Sprintf("c%d", i+1), addr, c.Servers,
			"  allow_root_tasks = true # the plugin tasks\n", ""))
	}
	c.WaitReadyNodes(60 * time.Second)
	c.runPluginJob()
	return c
}

// startServers starts the three servers, each joining the two others, and
// stops them at cleanup.
func (c *Cluster) startServers() {
	c.Servers = agentproc.StartServers(c.t, c.Bin, c.LogDir, serverAddrs)
}

// runPluginJob runs the plugin job and waits until both instances are
// healthy, as node and controller.
func (c *Cluster) runPluginJob() {
	t := c.t
	spec := filepath.Join(t.TempDir(), "plugin.hcl")
	if err := os.WriteFile(spec, []byte(csitest.HostpathPluginJob(c.Hostpath, c.PluginRoot, PluginID)), 0o600); err != nil {
		t.Fatalf("chaos: plugin job: %v", err)
	}
	if out, err := c.CLI(c.Servers[0], "job", "run", spec); err != nil {
		t.Fatalf("chaos: berth job run: %v\n%s", err, out)
	}
	c.WaitPluginHealthy(60 * time.Second)
}

// WaitPluginHealthy waits until the plugin is healthy on every client, as
// node and controller.
func (c *Cluster) WaitPluginHealthy(timeout time.Duration) {
	want := len(c.Clients)
	c.waitUntil(timeout, "the hostpath plugin healthy on every client", func() bool {
		p, _, err := c.API(c.Servers[0]).CSIPlugins().Info(PluginID, nil)
		return err == nil && p.NodesHealthy == want && p.ControllersHealthy == want
	})
}

// CLI runs the berth CLI against agent a and returns its combined output.
func (c *Cluster) CLI(a *Agent, args ...string) (string, error) {
	cmd := exec.Command(c.Bin, args...)
	cmd.Env = append(os.Environ(), api.AddressEnv+"="+a.HTTPAddr())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// API is a client of agent a's HTTP API with short timeouts: during a
// fault, an answer that does not come is an indeterminate result, not a
// reason to wait minutes.
func (c *Cluster) API(a *Agent) *api.Client {
	cl, err := api.NewClient(api.Config{Address: a.HTTPAddr(),
		Timeouts: api.Timeouts{Read: 10 * time.Second, Write: 20 * time.Second},
		OnRetry:  func(int, error) { c.Retried.Add(1) }})
	if err != nil {
		c.t.Fatalf("chaos: api client for %s: %v", a.Name, err)
	}
	return cl
}

// ServerByRPC is the server whose RPC address is addr, nil if none.
func (c *Cluster) ServerByRPC(addr string) *Agent { return agentproc.ServerByRPC(c.Servers, addr) }

// Leader is the server that every running server names as leader, or nil
// when they do not agree on one.
func (c *Cluster) Leader() *Agent {
	first := ""
	for _, s := range c.Servers {
		if !s.Proc.Running() {
			return nil
		}
		l, err := c.API(s).Status().Leader()
		if err != nil || l == "" || first != "" && l != first {
			return nil
		}
		first = l
	}
	return c.ServerByRPC(first)
}

// WaitLeader waits until the three servers agree on a leader and
// returns it.
func (c *Cluster) WaitLeader(timeout time.Duration) *Agent {
	var leader *Agent
	c.waitUntil(timeout, "the servers agreeing on a leader", func() bool {
		leader = c.Leader()
		return leader != nil
	})
	return leader
}

// WaitReadyNodes waits until every client's node is ready.
func (c *Cluster) WaitReadyNodes(timeout time.Duration) {
	c.waitUntil(timeout, fmt.Sprintf("%d ready nodes", len(c.Clients)), func() bool {
		nodes, _, err := c.API(c.Servers[0]).Nodes().List(nil)
		if err != nil {
			return false
		}
		ready := 0
		for _, n := range nodes {
			if n.Status == structs.NodeStatusReady {
				ready++
			}
		}
		return ready == len(c.Clients)
	})
}

// waitUntil polls f every 100 ms until it is true, failing the test once
// timeout has passed.
func (c *Cluster) waitUntil(timeout time.Duration, what string, f func() bool) {
	c.t.Helper()
	agentproc.WaitUntil(c.t, timeout, 100*time.Millisecond, "chaos: "+what, f)
}

// Kill kills agent a with SIGKILL and waits until it is reaped.
func (c *Cluster) Kill(a *Agent) error { return a.Proc.Kill() }

// Restart starts agent a again, with the arguments and data dir it had.
func (c *Cluster) Restart(a *Agent) error { return a.Proc.Start() }

// Pause stops agent a with SIGSTOP; Resume continues it with SIGCONT.
func (c *Cluster) Pause(a *Agent) error  { return a.Proc.Signal(syscall.SIGSTOP) }
func (c *Cluster) Resume(a *Agent) error { return a.Proc.Signal(syscall.SIGCONT) }
