package fleet

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/agentproc"
	"github.com/berth-csi/berth/harness/loadtest"
)

// The servers' loopback addresses, and the one the simulated fleet dials
// from: the chaos suite has .11-.13, .31 and .32, other process tests
// .21 and .41-.43, the load tool .51-.53 and .61.
var (
	serverAddrs = []string{"127.0.0.71", "127.0.0.72", "127.0.0.73"}
	fleetAddr   = "127.0.0.74"
)

// Agent is one berth server process of the cluster.
type Agent = agentproc.Agent

// Cluster is three berth server agents, real processes on their own
// loopback addresses, with the HTTP clients the measurements use.
type Cluster struct {
	t       testing.TB
	Bin     string // bin/berth, built for this run
	Servers []*Agent
	LogDir  string // one log file per server, kept after the test

	transport *http.Transport
	profiles  *loadtest.Cluster // only its SaveProfile, into LogDir
}

// StartCluster builds berth and starts three servers, each with
// server { max_heartbeats_per_second = maxHeartbeats }, and waits until
// they agree on a leader. They are ended by PID at the test's cleanup.
func StartCluster(t testing.TB, maxHeartbeats float64) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	c.Bin, c.transport, c.LogDir = agentproc.Setup(t, "fleet", 256, func() []*Agent { return c.Servers })
	c.profiles = &loadtest.Cluster{LogDir: c.LogDir}
	cfg := filepath.Join(t.TempDir(), "server.hcl")
	hcl := fmt.Sprintf("server {\n  max_heartbeats_per_second = %s\n}\n", strconv.FormatFloat(maxHeartbeats, 'f', -1, 64))
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatalf("fleet: write the servers' config %s: %v", cfg, err)
	}
	c.Servers = agentproc.StartServers(t, c.Bin, c.LogDir, serverAddrs, "-enable-debug", "-config", cfg)
	c.WaitLeader(90 * time.Second)
	return c
}

// RPCAddrs are the servers' RPC addresses.
func (c *Cluster) RPCAddrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.RPCAddr()
	}
	return out
}

// API is a client of server a's HTTP API; it retries what the servers
// did not apply (503).
func (c *Cluster) API(a *Agent) *api.Client { return agentproc.API(c.t, a, c.transport, nil) }

// Leader is the server that all three name as leader (GET
// /v1/status/leader), or nil when they do not agree.
func (c *Cluster) Leader() *Agent {
	return agentproc.ServerByRPC(c.Servers, agentproc.AgreedLeader(c.t, c.Servers, c.transport))
}

// Follower is a server other than leader.
func (c *Cluster) Follower(leader *Agent) *Agent { return agentproc.Follower(c.Servers, leader) }

// WaitLeader waits until the servers agree on a leader and returns it.
func (c *Cluster) WaitLeader(timeout time.Duration) *Agent {
	c.t.Helper()
	var leader *Agent
	WaitUntil(c.t, timeout, "the servers agreeing on a leader", func() bool {
		leader = c.Leader()
		return leader != nil
	})
	return leader
}

// SaveProfile saves a runtime profile of server a (see
// loadtest.Cluster.SaveProfile) into the log dir and returns its path.
func (c *Cluster) SaveProfile(a *Agent, name, query, file string) (string, error) {
	return c.profiles.SaveProfile(a, name, query, file)
}

// CPUProfile saves a CPU profile of server a over the next d
// (loadtest.Cluster.CPUProfile) and returns what waits for it.
func (c *Cluster) CPUProfile(t testing.TB, a *Agent, d time.Duration, file string) func() {
	return c.profiles.CPUProfile(t, a, d, file)
}

// HeartbeatMisses is berth_node_heartbeat_misses_total summed over the
// servers: the nodes marked down because their TTL ran out, each counted
// by the leader of the time.
func (c *Cluster) HeartbeatMisses() (int64, error) {
	var sum int64
	for _, s := range c.Servers {
		resp, err := http.Get(s.HTTPAddr() + "/v1/metrics?format=prometheus")
		if err != nil {
			return 0, fmt.Errorf("fleet: scrape the metrics of %s: %w", s.Name, err)
		}
		n, found, err := counter(bufio.NewScanner(resp.Body), "berth_node_heartbeat_misses_total")
		resp.Body.Close()
		if err != nil || !found {
			return 0, fmt.Errorf("fleet: berth_node_heartbeat_misses_total in the scrape of %s: found %t, %v", s.Name, found, err)
		}
		sum += n
	}
	return sum, nil
}

// counter reads an unlabelled counter's value from a Prometheus text
// scrape.
func counter(sc *bufio.Scanner, name string) (int64, bool, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		value, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return int64(f), true, err
	}
	return 0, false, sc.Err()
}

// WaitUntil polls f every 100 ms until it is true, failing the test
// once timeout has passed, naming what it waited for.
func WaitUntil(t testing.TB, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	agentproc.WaitUntil(t, timeout, 100*time.Millisecond, "fleet: "+what, f)
}
