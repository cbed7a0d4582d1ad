package server_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// gcJob is a service job of one exec task and no volume.
func gcJob(id string) *structs.Job {
	return &structs.Job{ID: id, Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "web", Count: 1,
		Tasks: []*structs.Task{{Name: "web", Driver: "exec", Config: map[string]any{"command": "/bin/true"}}},
	}}}
}

// runJob registers a job through s and returns the ID of its one placed
// allocation.
func runJob(t *testing.T, s *servertest.TestServer, id string) string {
	t.Helper()
	var reg structs.JobRegisterResponse
	must.NoError(t, call(t, s, "Job.Register", &structs.JobRegisterRequest{Job: gcJob(id)}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	return reg.Placed[0].ID
}

// reportAlloc reports an allocation's client status through s, as its
// client would.
func reportAlloc(t *testing.T, s *servertest.TestServer, id, status string) {
	t.Helper()
	must.NoError(t, call(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: id, ClientStatus: status}}}, &structs.GenericResponse{}))
}

// stopJob stops (or purges) a job through s.
func stopJob(t *testing.T, s *servertest.TestServer, id string, purge bool) uint64 {
	t.Helper()
	var resp structs.JobDeregisterResponse
	must.NoError(t, call(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: id, Purge: purge}, &resp))
	return resp.Index
}

// gcThrough runs System.GarbageCollect through s.
func gcThrough(t *testing.T, s *servertest.TestServer) structs.SystemGCResponse {
	t.Helper()
	var resp structs.SystemGCResponse
	must.NoError(t, call(t, s, "System.GarbageCollect", &structs.SystemGCRequest{}, &resp))
	return resp
}

// gone checks, on every server once it has applied index, that the
// allocations, jobs and nodes named are gone or there.
func gone(t *testing.T, c *servertest.TestCluster, index uint64, want bool, allocs, jobs, nodes []string) {
	t.Helper()
	for _, s := range c.Running() {
		waitApplied(t, s, index)
		st := s.State()
		for _, id := range allocs {
			a, err := st.AllocByID(nil, id)
			must.NoError(t, err)
			must.EqOp(t, want, a == nil, must.Sprintf("server %s: alloc %s", s.Name(), id))
		}
		for _, id := range jobs {
			j, err := st.JobByID(nil, "", id)
			must.NoError(t, err)
			must.EqOp(t, want, j == nil, must.Sprintf("server %s: job %s", s.Name(), id))
		}
		for _, id := range nodes {
			n, err := st.NodeByID(nil, id)
			must.NoError(t, err)
			must.EqOp(t, want, n == nil, must.Sprintf("server %s: node %s", s.Name(), id))
		}
	}
}

// TestGC_SystemGarbageCollect_ThroughFollower: `berth system gc` sent to a
// follower is run by the leader with every threshold at zero and removes,
// on every server, a stopped job's allocation over on its client, the job
// with it, and a down node; a running job, its allocation and a ready
// node stay. It answers what it removed.
func TestGC_SystemGarbageCollect_ThroughFollower(t *testing.T) {
	c := servertest.Cluster(t, 3)
	follower := c.Followers()[0]
	registerPluginNode(t, follower, "node-1", "hostpath")
	done := runJob(t, follower, "web")
	running := runJob(t, follower, "keeps-running")
	stopJob(t, follower, "web", false)
	reportAlloc(t, follower, done, structs.AllocClientStatusComplete)
	must.NoError(t, call(t, follower, "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-2")},
		&structs.NodeUpdateResponse{}))
	must.NoError(t, call(t, follower, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-2", Status: structs.NodeStatusDown},
		&structs.NodeUpdateResponse{}))

	resp := gcThrough(t, follower)
	must.Eq(t, structs.GCResult{Allocs: 1, Jobs: 1, Nodes: 1}, resp.Removed)
	gone(t, c, resp.Index, true, []string{done}, []string{"web"}, []string{"node-2"})
	gone(t, c, resp.Index, false, []string{running}, []string{"keeps-running"}, []string{"node-1"})

	// Nothing left to remove: a second run removes nothing.
	again := gcThrough(t, c.Followers()[1])
	must.Eq(t, structs.GCResult{}, again.Removed)
}

// TestGC_JobStopPurge: a purge removes the job at once, and with it its
// allocations already over on their client; one still running is asked
// to stop and goes at the next collection once its client reports it
// over, whatever its age.
func TestGC_JobStopPurge(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader := c.Leader()
	follower := c.Followers()[0]
	registerPluginNode(t, leader, "node-1", "hostpath")

	over := runJob(t, follower, "over")
	reportAlloc(t, follower, over, structs.AllocClientStatusFailed)
	index := stopJob(t, follower, "over", true)
	gone(t, c, index, true, []string{over}, []string{"over"}, nil)

	live := runJob(t, follower, "live")
	index = stopJob(t, follower, "live", true)
	gone(t, c, index, true, nil, []string{"live"}, nil)
	gone(t, c, index, false, []string{live}, nil, nil)
	a, err := leader.State().AllocByID(nil, live)
	must.NoError(t, err)
	must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus, must.Sprint("asked to stop"))
	must.Eq(t, structs.GCResult{}, gcThrough(t, follower).Removed, must.Sprint("its tasks may still run"))

	reportAlloc(t, follower, live, structs.AllocClientStatusComplete)
	resp := gcThrough(t, follower)
	must.Eq(t, structs.GCResult{Allocs: 1}, resp.Removed)
	gone(t, c, resp.Index, true, []string{live}, nil, nil)
}
