package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// testNodeSecret is the node secret of every node the tests register (a
// client sends its own, from its data dir).
const testNodeSecret = "5ec2e7e5-0000-4000-8000-000000000001"

// call calls s in process, as the test nodes' client: a request without a
// token carries testNodeSecret (ACLs off, any caller is management
// besides).
func call(t *testing.T, s *servertest.TestServer, method string, args, reply any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if a, ok := args.(interface {
		GetAuthToken() string
		SetAuthToken(string)
	}); ok && a.GetAuthToken() == "" {
		a.SetAuthToken(testNodeSecret)
	}
	return s.RPC(ctx, method, args, reply)
}

// registerPluginNode registers a ready node running a node-only plugin:
// with no controller, registering a volume asks no client to validate it.
func registerPluginNode(t *testing.T, s *servertest.TestServer, nodeID, pluginID string) uint64 {
	t.Helper()
	var resp structs.NodeUpdateResponse
	must.NoError(t, call(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin(nodeID, pluginID, false, true, true),
	}, &resp))
	must.Positive(t, resp.Index)
	return resp.Index
}

func registerVolume(t *testing.T, s *servertest.TestServer, id, pluginID string) uint64 {
	t.Helper()
	var resp structs.CSIVolumeRegisterResponse
	must.NoError(t, call(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume(id, pluginID)},
	}, &resp))
	return resp.Index
}

// staleGet reads a volume from s's own state once s has applied index.
func staleGet(t *testing.T, s *servertest.TestServer, id string, index uint64) *structs.CSIVolume {
	t.Helper()
	waitApplied(t, s, index)
	var resp structs.CSIVolumeGetResponse
	must.NoError(t, call(t, s, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id, QueryOptions: structs.QueryOptions{AllowStale: true}}, &resp))
	return resp.Volume
}

// waitApplied waits until s's state store has applied index.
func waitApplied(t *testing.T, s *servertest.TestServer, index uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		latest, err := s.State().LatestIndex()
		must.NoError(t, err)
		if latest >= index {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s applied only up to %d, want %d", s.Name(), latest, index)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
