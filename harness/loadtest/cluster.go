package loadtest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/harness/agentproc"
	"github.com/berth-csi/berth/structs"
)

// The agents' loopback addresses: the chaos suite has .11-.13, .31 and
// .32; other process tests .21 and .41-.43.
var (
	serverAddrs = []string{"127.0.0.51", "127.0.0.52", "127.0.0.53"}
	clientAddr  = "127.0.0.61"
)

// PluginID is the ID the client registers the mock driver under.
const PluginID = "mock"

// Agent is one berth agent process of the cluster.
type Agent = agentproc.Agent

// Options sizes the cluster.
type Options struct {
	// AttachLimit is the mock driver's -attach-limit: how many volumes
	// the client's node may have claimed at once.
	AttachLimit int
	// PluginTask starts no mock driver of its own: the client allows
	// root tasks, so that the mock runs as a plugin task (PluginJob), and
	// the cluster is ready once the client's node is.
	PluginTask bool
}

// Cluster is three server agents and one client agent with the csi-test
// mock driver registered as an external plugin, all real processes on
// their own loopback addresses.
type Cluster struct {
	t       testing.TB
	Bin     string // bin/berth, built for this run
	Servers []*Agent
	Client  *Agent
	Mock    *csitest.Plugin
	LogDir  string // one log file per agent, kept after the test

	// Retried counts the answers the API clients retried (Unavailable or
	// NotReady: not applied).
	Retried atomic.Int64

	// transport is shared by every API client, with enough idle
	// connections per agent for the most callers of a run, so that a
	// run measures requests, not connection setup.
	transport *http.Transport
	extSeq    atomic.Int64 // names of the storage volumes made in the mock
	volSeq    atomic.Int64 // IDs of the volumes registered
}

// StartCluster builds berth, starts the mock driver, the servers and the
// client, and waits until the plugin is healthy as node and controller.
// Everything is ended by PID in the test's cleanup.
func StartCluster(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	c.Bin, c.transport, c.LogDir = agentproc.Setup(t, "loadtest", 4096, c.agents)
	if opts.PluginTask {
		c.startServers()
		c.WaitLeader(90 * time.Second)
		c.Client = agentproc.StartClient(t, c.Bin, c.LogDir, "c1", clientAddr, c.Servers, "  allow_root_tasks = true\n", "")
		c.waitUntil(60*time.Second, "the client's node ready", c.nodeReady)
		return c
	}
	// The mock answers without controller publish, so that a claim is a
	// write of the servers alone (see doc.go).
	c.Mock = csitest.StartMockDriver(t, csitest.MockOptions{
		ExtraArgs: []string{"-disable-attach", fmt.Sprintf("-attach-limit=%d", max(opts.AttachLimit, 2))}})
	t.Cleanup(func() { // before the mock's own cleanup removes its log
		if err := os.WriteFile(filepath.Join(c.LogDir, "mock-driver.log"), []byte(agentproc.TailFile(c.Mock.LogPath, 400)+"\n"), 0o644); err != nil {
			t.Logf("loadtest: keep the mock driver's log: %v", err)
		}
	})

	c.startServers()
	c.WaitLeader(90 * time.Second)
	// The mock driver as an external monolith plugin.
	c.Client = agentproc.StartClient(t, c.Bin, c.LogDir, "c1", clientAddr, c.Servers, "",
		fmt.Sprintf("plugin %q {\n  type   = \"monolith\"\n  socket = %q\n}\n", PluginID, c.Mock.Socket))
	c.waitUntil(60*time.Second, "the client's node ready and the mock plugin healthy", c.pluginReady)
	return c
}

func (c *Cluster) agents() []*Agent {
	out := append([]*Agent{}, c.Servers...)
	if c.Client != nil {
		out = append(out, c.Client)
	}
	return out
}

// startServers starts the three servers, each joining the two others, and
// stops them at cleanup.
func (c *Cluster) startServers() {
	c.Servers = agentproc.StartServers(c.t, c.Bin, c.LogDir, serverAddrs, "-enable-debug")
}

// nodeReady reports whether the client's node is ready.
func (c *Cluster) nodeReady() bool {
	nodes, _, err := c.API(c.Servers[0]).Nodes().List(nil)
	return err == nil && len(nodes) == 1 && nodes[0].Status == structs.NodeStatusReady
}

// pluginReady reports whether the client's node is ready and the mock
// plugin healthy on it as node and controller.
func (c *Cluster) pluginReady() bool {
	if !c.nodeReady() {
		return false
	}
	p, _, err := c.API(c.Servers[0]).CSIPlugins().Info(PluginID, nil)
	return err == nil && p.NodesHealthy == 1 && p.ControllersHealthy == 1
}

// API is a client of agent a's HTTP API. It retries what the servers did
// not apply (503), counting each retry in Retried.
func (c *Cluster) API(a *Agent) *api.Client {
	return agentproc.API(c.t, a, c.transport, func(int, error) { c.Retried.Add(1) })
}

// probe is a client of agent a's HTTP API for polling (agentproc.Probe).
func (c *Cluster) probe(a *Agent) *api.Client { return agentproc.Probe(c.t, a, c.transport) }

// ServerByRPC is the server whose RPC address is addr, nil if none.
func (c *Cluster) ServerByRPC(addr string) *Agent { return agentproc.ServerByRPC(c.Servers, addr) }

// agreedLeader is the leader's RPC address that every server in among
// names, "" when one names none or they differ.
func (c *Cluster) agreedLeader(among []*Agent) string {
	return agentproc.AgreedLeader(c.t, among, c.transport)
}

// Leader is the server that all three servers name as leader, or nil when
// one is down or they do not agree.
func (c *Cluster) Leader() *Agent {
	for _, s := range c.Servers {
		if !s.Running() {
			return nil
		}
	}
	return c.ServerByRPC(c.agreedLeader(c.Servers))
}

// Follower is a server other than leader.
func (c *Cluster) Follower(leader *Agent) *Agent { return agentproc.Follower(c.Servers, leader) }

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

// waitUntil polls f every 50 ms until it is true, failing the test once
// timeout has passed.
func (c *Cluster) waitUntil(timeout time.Duration, what string, f func() bool) {
	c.t.Helper()
	agentproc.WaitUntil(c.t, timeout, 50*time.Millisecond, "loadtest: "+what, f)
}
