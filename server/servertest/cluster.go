package servertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/structs"
)

// TestServer is one server of a test cluster, with what it needs to be
// restarted in place.
type TestServer struct {
	*server.Server
	Config *server.Config
	Index  int
}

// TestCluster is a set of servers that formed one raft cluster.
type TestCluster struct {
	t       testing.TB
	Servers []*TestServer
}

// ConfigOption adjusts every server's config before it starts.
type ConfigOption func(*server.Config)

// TestConfig is a server config for tests: a temp data dir, free ports on
// 127.0.0.1, quick raft and gossip timing, logs to t.Log.
func TestConfig(t testing.TB, name string, expect int) *server.Config {
	cfg := server.DefaultConfig()
	cfg.NodeName = name
	cfg.DataDir = t.TempDir()
	cfg.BindAddr = "127.0.0.1"
	cfg.RPCPort = 0
	cfg.SerfPort = 0
	cfg.BootstrapExpect = expect
	cfg.GossipLocal = true
	cfg.ReconcileInterval = time.Second
	cfg.Logger = testlog.Logger(t, name)
	return cfg
}

// Cluster starts n servers that join each other and waits until they agree
// on a leader. Every server is shut down when the test ends.
func Cluster(t testing.TB, n int, opts ...ConfigOption) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t}
	var join []string
	for i := 0; i < n; i++ {
		cfg := TestConfig(t, fmt.Sprintf("server-%d", i), n)
		cfg.Join = join
		for _, o := range opts {
			o(cfg)
		}
		s, err := server.New(cfg)
		if err != nil {
			t.Fatalf("servertest: start server %d: %v", i, err)
		}
		ts := &TestServer{Server: s, Config: cfg, Index: i}
		// Pin the picked ports so a restart comes back on the same ones.
		cfg.RPCPort = portOf(t, s.RPCAddr())
		cfg.SerfPort = portOf(t, s.SerfAddr())
		c.Servers = append(c.Servers, ts)
		t.Cleanup(func() { _ = s.Shutdown() })
		if i == 0 {
			join = []string{s.SerfAddr()}
		}
	}
	c.WaitForLeader(t, 30*time.Second)
	return c
}

// WaitForLeader waits until every running server agrees on one leader and
// returns it.
func (c *TestCluster) WaitForLeader(t testing.TB, timeout time.Duration) *TestServer {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.agreedLeader(); l != nil {
			return l
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("servertest: no agreed leader after %s", timeout)
	return nil
}

func (c *TestCluster) agreedLeader() *TestServer {
	var leader *TestServer
	addr := ""
	for _, s := range c.Running() {
		var got string
		if err := s.RPC(context.Background(), "Status.Leader", &structs.GenericRequest{}, &got); err != nil || got == "" {
			return nil
		}
		if addr != "" && got != addr {
			return nil
		}
		addr = got
		if s.IsLeader() {
			leader = s
		}
	}
	return leader
}

// Leader returns the current leader, or nil.
func (c *TestCluster) Leader() *TestServer {
	for _, s := range c.Running() {
		if s.IsLeader() {
			return s
		}
	}
	return nil
}

// Followers returns the running servers that do not lead.
func (c *TestCluster) Followers() []*TestServer {
	var out []*TestServer
	for _, s := range c.Running() {
		if !s.IsLeader() {
			out = append(out, s)
		}
	}
	return out
}

// Running returns the servers not stopped by Kill.
func (c *TestCluster) Running() []*TestServer {
	var out []*TestServer
	for _, s := range c.Servers {
		if s.Server != nil {
			out = append(out, s)
		}
	}
	return out
}

// Kill stops server i without leaving the cluster, as a crash would.
func (c *TestCluster) Kill(i int) {
	c.t.Helper()
	s := c.Servers[i]
	if s.Server == nil {
		return
	}
	if err := s.Shutdown(); err != nil {
		c.t.Logf("servertest: shutdown of server %d: %v", i, err)
	}
	s.Server = nil
}

// Restart starts server i again on its data dir and ports, joining the
// servers still running.
func (c *TestCluster) Restart(i int) *TestServer {
	c.t.Helper()
	s := c.Servers[i]
	if s.Server != nil {
		c.t.Fatalf("servertest: server %d is running; Kill it first", i)
	}
	cfg := *s.Config
	cfg.Join = nil
	for _, o := range c.Running() {
		cfg.Join = append(cfg.Join, o.SerfAddr())
	}
	srv, err := server.New(&cfg)
	if err != nil {
		c.t.Fatalf("servertest: restart server %d: %v", i, err)
	}
	s.Server = srv
	c.t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}
