package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

// TestPlugins_Lifecycle runs a plugin nobody here wrote (the csi-test mock
// driver) and berth's own through the same life: it appears with its
// provider and version, a crash and a hang make it unhealthy and its
// volumes unschedulable, a restart makes it healthy, and removing it from
// the client deletes it from the servers.
func TestPlugins_Lifecycle(t *testing.T) {
	cases := []struct {
		name     string
		start    func(t *testing.T) *csitest.Plugin
		provider string
		version  string
	}{
		{"mock-driver", func(t *testing.T) *csitest.Plugin { return csitest.StartMockDriver(t, csitest.MockOptions{}) },
			csitest.DefaultMockName, csitest.MockVendorVersion},
		{"berth-hostpath", func(t *testing.T) *csitest.Plugin { return csitest.StartHostpath(t) },
			csitest.HostpathName, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pluginLifecycle(t, tc.start(t), tc.provider, tc.version)
		})
	}
}

func pluginLifecycle(t *testing.T, mock *csitest.Plugin, provider, version string) {
	c := cluster(t)
	start := time.Now()
	cl := clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("mock", "monolith", mock.Socket))

	eventually(t, 20*time.Second, "the plugin to be healthy on the servers", func() bool {
		return healthy(plugin(t, c, "mock"), 1, 1)
	})
	t.Logf("figure: client start -> plugin healthy on the servers in %s", time.Since(start).Round(time.Millisecond))
	p := plugin(t, c, "mock")
	must.Eq(t, provider, p.Provider)
	if version != "" {
		must.Eq(t, version, p.Version)
	}
	must.NotEq(t, "", p.Version)
	must.MapContainsKey(t, p.Nodes, cl.NodeID())

	vol := createSpec("data")
	vol.PluginID = "mock"
	_, err := create(t, c.Leader(), vol)
	must.NoError(t, err)

	mock.Kill()
	took := eventually(t, 20*time.Second, "the killed plugin to be unhealthy", func() bool {
		return healthy(plugin(t, c, "mock"), 0, 0)
	})
	t.Logf("figure: plugin killed -> unhealthy on the servers in %s (probe interval %s)", took.Round(time.Millisecond), cl.Config.ProbeInterval)
	must.False(t, volume(t, c, "data").Schedulable, must.Sprint("an unhealthy plugin makes its volumes unschedulable"))
	eventually(t, 10*time.Second, "a node event about the plugin", func() bool {
		return hasEvent(node(t, c, cl.NodeID()), "unhealthy")
	})

	mock.Restart()
	took = eventually(t, 20*time.Second, "the restarted plugin to be healthy", func() bool {
		return healthy(plugin(t, c, "mock"), 1, 1)
	})
	t.Logf("figure: plugin restarted -> healthy on the servers in %s", took.Round(time.Millisecond))
	must.True(t, volume(t, c, "data").Schedulable)

	mock.Pause()
	took = eventually(t, 20*time.Second, "the hung plugin to be unhealthy", func() bool {
		return healthy(plugin(t, c, "mock"), 0, 0)
	})
	t.Logf("figure: plugin hung (SIGSTOP) -> unhealthy on the servers in %s", took.Round(time.Millisecond))
	mock.Resume()
	eventually(t, 20*time.Second, "the resumed plugin to be healthy", func() bool { return healthy(plugin(t, c, "mock"), 1, 1) })

	// Removing the plugin from the client removes it from the servers.
	must.NoError(t, cl.Registry().Deregister("mock", ""))
	eventually(t, 20*time.Second, "the removed plugin to be deleted", func() bool { return plugin(t, c, "mock") == nil })
}

func TestPlugins_SplitControllerAndNode(t *testing.T) {
	c := cluster(t)
	ctrl := csitest.StartMockDriver(t, csitest.MockOptions{})
	nodePlugin := csitest.StartMockDriver(t, csitest.MockOptions{})
	c1 := clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("split", "controller", ctrl.Socket))
	c2 := clienttest.New(t, "client-2", rpcAddrs(c), clienttest.WithPlugin("split", "node", nodePlugin.Socket))

	eventually(t, 20*time.Second, "one plugin with a controller and a node", func() bool {
		return healthy(plugin(t, c, "split"), 1, 1)
	})
	p := plugin(t, c, "split")
	must.Eq(t, 1, p.ControllersExpected)
	must.Eq(t, 1, p.NodesExpected)
	must.MapContainsKey(t, p.Controllers, c1.NodeID())
	must.MapContainsKey(t, p.Nodes, c2.NodeID())
	must.True(t, p.ControllerRequired)
}

func TestPlugins_DeadClientMarkedDown(t *testing.T) {
	c := cluster(t)
	mock := csitest.StartMockDriver(t, csitest.MockOptions{})
	cl := clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("mock", "monolith", mock.Socket))
	eventually(t, 20*time.Second, "the plugin to be healthy", func() bool { return healthy(plugin(t, c, "mock"), 1, 1) })

	cl.Stop()
	took := eventually(t, 30*time.Second, "the silent node to be marked down", func() bool {
		return node(t, c, cl.NodeID()).Status == structs.NodeStatusDown
	})
	t.Logf("figure: client stopped -> node down in %s (TTL 2s)", took.Round(time.Millisecond))
	p := plugin(t, c, "mock")
	must.Eq(t, 0, p.NodesHealthy, must.Sprint("a down node's instances are unhealthy"))
	must.Eq(t, 1, p.NodesExpected)

	back := cl.Restart(t)
	must.Eq(t, cl.NodeID(), back.NodeID(), must.Sprint("the node ID survives a restart"))
	eventually(t, 20*time.Second, "the node to be ready again", func() bool {
		return node(t, c, back.NodeID()).Status == structs.NodeStatusReady
	})
	eventually(t, 20*time.Second, "the plugin to be healthy again", func() bool { return healthy(plugin(t, c, "mock"), 1, 1) })
}

func TestPlugins_ClientFailsOverWhenItsServerDies(t *testing.T) {
	c := cluster(t)
	mock := csitest.StartMockDriver(t, csitest.MockOptions{})
	first := c.Followers()[0]
	servers := []string{first.RPCAddr()}
	for _, s := range c.Running() {
		if s != first {
			servers = append(servers, s.RPCAddr())
		}
	}
	cl := clienttest.New(t, "client-1", servers, clienttest.WithPlugin("mock", "monolith", mock.Socket))
	eventually(t, 20*time.Second, "the plugin to be healthy", func() bool { return healthy(plugin(t, c, "mock"), 1, 1) })

	c.Kill(first.Index)
	// Past several TTLs the node is still ready: its heartbeats moved on.
	time.Sleep(5 * time.Second)
	must.Eq(t, structs.NodeStatusReady, node(t, c, cl.NodeID()).Status)
	// And fingerprint changes still arrive.
	mock.Kill()
	eventually(t, 20*time.Second, "the plugin change to reach the servers", func() bool {
		return healthy(plugin(t, c, "mock"), 0, 0)
	})

	// The server holding the client's session can call it back; any other
	// server forwards to it.
	for _, s := range c.Running() {
		var pong structs.ClientPingResponse
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.RPC(ctx, "ClientStatus.Ping", &structs.NodeSpecificRequest{NodeID: cl.NodeID()}, &pong)
		cancel()
		must.NoError(t, err, must.Sprintf("ping through %s", s.Name()))
		must.Eq(t, cl.NodeID(), pong.NodeID)
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// TestPlugins_OneNotUpHidesNoOther: a client with two external plugins, one
// whose socket is not there: the other is healthy on the servers within a
// probe interval, and the missing one is listed unhealthy with the reason.
// Before, the servers refused the whole node update for the plugin with
// no NodeGetInfo answer, and the healthy one stayed invisible.
func TestPlugins_OneNotUpHidesNoOther(t *testing.T) {
	c := cluster(t)
	up := csitest.StartHostpath(t)
	ghost := t.TempDir() + "/nobody-listens.sock"
	start := time.Now()
	clienttest.New(t, "client-1", rpcAddrs(c),
		clienttest.WithPlugin("ghost", "monolith", ghost), clienttest.WithPlugin("up", "monolith", up.Socket))
	eventually(t, 20*time.Second, "the plugin that is up healthy on the servers", func() bool { return healthy(plugin(t, c, "up"), 1, 1) })
	t.Logf("figure: client start -> the healthy plugin seen healthy beside a missing one: %s", time.Since(start).Round(time.Millisecond))
	eventually(t, 20*time.Second, "the missing plugin listed unhealthy", func() bool {
		p := plugin(t, c, "ghost")
		return p != nil && len(p.Nodes) == 1 && p.NodesHealthy == 0
	})
	for _, info := range plugin(t, c, "ghost").Nodes {
		must.False(t, info.Healthy)
		must.StrContains(t, info.HealthDescription, "NodeGetInfo")
	}
}
