package clienttest

import (
	"context"
	"testing"
	"time"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestClient is a running client agent.
type TestClient struct {
	*client.Client
	Config *client.Config
	cancel context.CancelFunc
	done   chan struct{}
}

// Option adjusts the client's config before it starts.
type Option func(*client.Config)

// WithPlugin declares a plugin run outside berth, as the client config does.
func WithPlugin(id, typ, socket string) Option {
	return func(c *client.Config) {
		c.Plugins = append(c.Plugins, &dynamicplugins.PluginInfo{
			ID: id, Type: structs.CSIPluginType(typ), Socket: socket, Source: "config"})
	}
}

// New starts a client that joins servers. Probing is fast (250ms) so
// health changes show quickly. The client stops when the test ends.
func New(t testing.TB, name string, servers []string, opts ...Option) *TestClient {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.NodeName = name
	cfg.DataDir = t.TempDir()
	cfg.Servers = servers
	cfg.ProbeInterval = 250 * time.Millisecond
	cfg.ProbeTimeout = 500 * time.Millisecond
	cfg.UpdateCoalesce = 20 * time.Millisecond
	cfg.RPCTimeout = 5 * time.Second
	cfg.Logger = testlog.Logger(t, name)
	for _, o := range opts {
		o(cfg)
	}
	return start(t, cfg)
}

func start(t testing.TB, cfg *client.Config) *TestClient {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("clienttest: start client %s: %v", cfg.NodeName, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tc := &TestClient{Client: c, Config: cfg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tc.done)
		c.Run(ctx)
	}()
	t.Cleanup(tc.Stop)
	return tc
}

// Stop stops the client and waits for it; it heartbeats no more, as if its
// machine died.
func (c *TestClient) Stop() {
	c.cancel()
	<-c.done
}

// Restart starts the client again on the same data dir (the same node).
func (c *TestClient) Restart(t testing.TB) *TestClient {
	t.Helper()
	c.Stop()
	cfg := *c.Config
	return start(t, &cfg)
}
