package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func TestHandler_SystemGC(t *testing.T) {
	replies := map[string]any{
		"System.GarbageCollect": &structs.SystemGCResponse{Removed: structs.GCResult{Allocs: 3, Jobs: 1, Nodes: 2},
			WriteMeta: structs.WriteMeta{Index: 61}},
	}
	testRoutes(t, replies, []routeCase{
		{"gc", "PUT", "/v1/system/gc", "", "System.GarbageCollect", "61",
			`{"Removed":{"Allocs":3,"Jobs":1,"Nodes":2,"PastClaims":0},"Index":61}`},
	})
	mustNotAllowed(t, "GET", "/v1/system/gc", "PUT")
	mustNotAllowed(t, "POST", "/v1/system/gc", "PUT")
}

// TestSystemGC_RealServer: the api client's GarbageCollect, through the
// HTTP API to a real server, removes a down node and says so.
func TestSystemGC_RealServer(t *testing.T) {
	cluster := servertest.Cluster(t, 1)
	s := cluster.Servers[0]
	srv := httptest.NewServer(New(s.Server, testLogger(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)

	ctx := t.Context()
	must.NoError(t, s.RPC(ctx, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-1"),
		WriteRequest: structs.WriteRequest{AuthToken: "5ec2e7e5-0000-4000-8000-000000000009"}}, &structs.NodeUpdateResponse{}))
	must.NoError(t, s.RPC(ctx, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown,
		WriteRequest: structs.WriteRequest{AuthToken: "5ec2e7e5-0000-4000-8000-000000000009"}}, &structs.NodeUpdateResponse{}))

	resp, wm, err := c.System().GarbageCollect()
	must.NoError(t, err)
	must.Eq(t, structs.GCResult{Nodes: 1}, resp.Removed)
	must.Positive(t, wm.LastIndex)
	_, _, err = c.Nodes().Info("node-1", nil)
	var ae *api.Error
	must.ErrorAs[*api.Error](t, err, &ae)
	must.EqOp(t, http.StatusNotFound, ae.StatusCode)
}
