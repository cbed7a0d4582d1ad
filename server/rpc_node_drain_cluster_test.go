package server_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestCluster_DrainThroughFollowerSurvivesLeaderLoss: a drain asked of a
// follower reaches the leader; its migration (max_parallel 1) is under
// way when the leader dies, and the next leader's drainer resumes it:
// the second allocation leaves once the first one's replacement runs, and
// the drain completes.
func TestCluster_DrainThroughFollowerSurvivesLeaderLoss(t *testing.T) {
	c := servertest.Cluster(t, 3, func(cfg *server.Config) { cfg.HeartbeatTTL = 10 * time.Minute })
	leader := c.Leader()
	registerPluginNode(t, leader, "node-1", "hostpath")
	job := statetest.Job("web")
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	var reg structs.JobRegisterResponse
	must.NoError(t, call(t, leader, "Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.SliceLen(t, 2, reg.Placed)
	reportStatus(t, leader, structs.AllocClientStatusRunning, reg.Placed[0].ID, reg.Placed[1].ID)
	registerPluginNode(t, leader, "node-2", "hostpath")

	follower := c.Followers()[0]
	var resp structs.NodeDrainUpdateResponse
	must.NoError(t, call(t, follower, "Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: "node-1",
		DrainSpec: &structs.DrainSpec{Deadline: time.Hour}}, &resp))
	waitApplied(t, follower, resp.Index)

	// One in flight: its replacement is placed on node-2 but not running.
	var replacement string
	waitFor(t, 20*time.Second, "one replacement placed", func() bool {
		replacement = ""
		onOne := 0
		for _, a := range liveAllocs(t, leader, "web") {
			switch a.NodeID {
			case "node-1":
				onOne++
			case "node-2":
				must.EqOp(t, "", replacement, must.Sprint("max_parallel 1: one migration at a time"))
				replacement = a.ID
			}
		}
		return onOne == 1 && replacement != ""
	})

	c.Kill(leader.Index)
	next := c.WaitForLeader(t, 30*time.Second)
	reportStatus(t, next, structs.AllocClientStatusRunning, replacement)
	waitFor(t, 20*time.Second, "the drain complete under the new leader", func() bool {
		n, err := next.State().NodeByID(nil, "node-1")
		must.NoError(t, err)
		return !n.Draining()
	})
	for _, a := range liveAllocs(t, next, "web") {
		must.EqOp(t, "node-2", a.NodeID)
	}
}

func reportStatus(t *testing.T, s *servertest.TestServer, status string, ids ...string) {
	t.Helper()
	var allocs []*structs.Allocation
	for _, id := range ids {
		allocs = append(allocs, &structs.Allocation{ID: id, ClientStatus: status})
	}
	must.NoError(t, call(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: allocs}, &structs.GenericResponse{}))
}

func liveAllocs(t *testing.T, s *servertest.TestServer, jobID string) []*structs.Allocation {
	t.Helper()
	iter, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	must.NoError(t, err)
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}
