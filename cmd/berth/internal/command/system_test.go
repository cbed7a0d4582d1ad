package command

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/cmd/berth/internal/httpapi"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// gcNodeSecret is the node secret the test nodes register with.
const gcNodeSecret = "5ec2e7e5-0000-4000-8000-0000000000c1"

// TestSystemGC_RealServer runs `berth system gc` and `berth job stop
// -purge` against a real server through the real HTTP API: the counts
// printed are what the leader removed.
func TestSystemGC_RealServer(t *testing.T) {
	cluster := servertest.Cluster(t, 1)
	s := cluster.Servers[0]
	srv := httptest.NewServer(httpapi.New(s.Server, nil))
	t.Cleanup(srv.Close)
	cli := func(args ...string) result { return runCLI(t, srv.URL, "", args...) }
	rpc := func(method string, args, reply any) {
		t.Helper()
		must.NoError(t, s.RPC(context.Background(), method, args, reply))
	}
	asNode := structs.WriteRequest{AuthToken: gcNodeSecret}

	rpc("Node.Register", &structs.NodeRegisterRequest{Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true),
		WriteRequest: asNode}, &structs.NodeUpdateResponse{})
	rpc("Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-2"), WriteRequest: asNode}, &structs.NodeUpdateResponse{})
	rpc("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-2", Status: structs.NodeStatusDown, WriteRequest: asNode},
		&structs.NodeUpdateResponse{})
	job := statetest.Job("web")
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	var reg structs.JobRegisterResponse
	rpc("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg)
	must.SliceLen(t, 1, reg.Placed)
	allocID := reg.Placed[0].ID

	r := cli("system", "gc")
	mustExit(t, r, 0, "")
	must.EqOp(t, "Garbage collection removed 0 allocations, 0 jobs, 1 node and 0 past claims\n", r.stdout)
	gone, err := s.State().NodeByID(nil, "node-2")
	must.NoError(t, err)
	must.Nil(t, gone, must.Sprint("the down node is removed"))
	mustExit(t, cli("node", "status", "node-2"), exitError, `node "node-2" not found`)

	// A purge removes the job; its allocation, still running, stays
	// until its client reports it over, then goes at the next collection.
	mustExit(t, cli("job", "stop", "-purge", "web"), 0, "")
	a, err := s.State().AllocByID(nil, allocID)
	must.NoError(t, err)
	must.NotNil(t, a)
	must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
	r = cli("system", "gc")
	mustExit(t, r, 0, "")
	must.EqOp(t, "Garbage collection removed nothing\n", r.stdout)

	rpc("Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: allocID, ClientStatus: structs.AllocClientStatusComplete}}, WriteRequest: asNode}, &structs.GenericResponse{})
	r = cli("system", "gc", "-json")
	mustExit(t, r, 0, "")
	must.StrContains(t, r.stdout, "\"Removed\": {\n        \"Allocs\": 1,")
	var out structs.SystemGCResponse
	must.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	must.Eq(t, structs.GCResult{Allocs: 1}, out.Removed)
	must.Positive(t, out.Index, must.Sprint("the collection's raft index"))
	a, err = s.State().AllocByID(nil, allocID)
	must.NoError(t, err)
	must.Nil(t, a)
}

func TestSystemGC_Errors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		replyError(w, 403, "PermissionDenied", "Permission denied: token lacks a management token")
	}))
	t.Cleanup(srv.Close)
	r := runCLI(t, srv.URL, "", "system", "gc")
	mustExit(t, r, 1, "Error: Permission denied: token lacks a management token")
	must.EqOp(t, "", r.stdout)

	r = runCLI(t, srv.URL, "", "system", "gc", "extra")
	mustExit(t, r, 2, "Usage: berth system gc")

	r = runCLI(t, srv.URL, "", "system")
	mustExit(t, r, 2, "gc  Collect garbage now")
}

func TestGCSummary(t *testing.T) {
	must.EqOp(t, "Garbage collection removed 1 allocation, 2 jobs, 0 nodes and 1 past claim",
		gcSummary(structs.GCResult{Allocs: 1, Jobs: 2, PastClaims: 1}))
	must.EqOp(t, "Garbage collection removed nothing", gcSummary(structs.GCResult{}))
}
