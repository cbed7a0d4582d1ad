package integration

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// cluster starts three servers with a short heartbeat TTL, so a dead
// client is noticed within the test.
func cluster(t *testing.T) *servertest.TestCluster {
	return servertest.Cluster(t, 3, func(c *server.Config) { c.HeartbeatTTL = 2 * time.Second })
}

// hostpathCluster runs three servers and one client with berth-hostpath as
// a monolith plugin named "hostpath".
func hostpathCluster(t *testing.T) *servertest.TestCluster {
	c := cluster(t)
	plug := csitest.StartHostpath(t)
	clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("hostpath", "monolith", plug.Socket))
	eventually(t, 20*time.Second, "hostpath healthy", func() bool { return healthy(plugin(t, c, "hostpath"), 1, 1) })
	return c
}

func rpcAddrs(c *servertest.TestCluster) []string {
	var out []string
	for _, s := range c.Running() {
		out = append(out, s.RPCAddr())
	}
	return out
}

// rpc calls an endpoint on one server, in-process.
func rpc(t *testing.T, s *servertest.TestServer, method string, args, reply any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s.RPC(ctx, method, args, reply)
}

// create creates vol through s and returns the volume made.
func create(t *testing.T, s *servertest.TestServer, vol *structs.CSIVolume) (*structs.CSIVolume, error) {
	t.Helper()
	var resp structs.CSIVolumeCreateResponse
	err := rpc(t, s, "CSIVolume.Create", &structs.CSIVolumeCreateRequest{Volumes: []*structs.CSIVolume{vol}}, &resp)
	if err != nil {
		return nil, err
	}
	must.SliceLen(t, 1, resp.Volumes)
	return resp.Volumes[0], nil
}

// plugin reads a plugin from the first running server; nil when absent.
func plugin(t *testing.T, c *servertest.TestCluster, id string) *structs.CSIPlugin {
	t.Helper()
	var resp structs.CSIPluginGetResponse
	must.NoError(t, rpc(t, c.Running()[0], "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: id}, &resp))
	return resp.Plugin
}

func node(t *testing.T, c *servertest.TestCluster, id string) *structs.Node {
	t.Helper()
	var resp structs.SingleNodeResponse
	must.NoError(t, rpc(t, c.Running()[0], "Node.Get", &structs.NodeSpecificRequest{NodeID: id}, &resp))
	return resp.Node
}

// eventually polls cond until it holds, and returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(cond), wait.Timeout(timeout), wait.Gap(25*time.Millisecond)),
		must.Sprintf("after %s still waiting for %s", timeout, what))
	return time.Since(start)
}

func healthy(p *structs.CSIPlugin, ctrl, nodes int) bool {
	return p != nil && p.ControllersHealthy == ctrl && p.NodesHealthy == nodes
}

func hasEvent(n *structs.Node, substr string) bool {
	for _, e := range n.Events {
		if containsFold(e.Message, substr) {
			return true
		}
	}
	return false
}

func volume(t *testing.T, c *servertest.TestCluster, id string) *structs.CSIVolume {
	t.Helper()
	var resp structs.CSIVolumeGetResponse
	must.NoError(t, rpc(t, c.Running()[0], "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id}, &resp))
	must.NotNil(t, resp.Volume, must.Sprintf("volume %q", id))
	return resp.Volume
}
