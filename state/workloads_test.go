package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func planClaim(vol, alloc string) structs.CSIVolumeClaimRequest {
	return structs.CSIVolumeClaimRequest{VolumeID: vol, AllocationID: alloc, Mode: write, State: structs.CSIVolumeClaimStateTaken}
}

func TestStateStore_ApplyPlan_AllOrNothing(t *testing.T) {
	s := claimWorld(t)
	p1, p2 := statetest.Alloc("p1", "n1"), statetest.Alloc("p2", "n1")

	// Two writers on a single-writer volume in one plan: neither lands.
	err := s.ApplyPlan(10, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{p1, p2},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1"), planClaim("snw", "p2")}})
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, "p1")
	got, err := s.AllocByID(nil, "p1")
	must.NoError(t, err)
	must.Nil(t, got, must.Sprint("a failed plan writes no allocation"))

	// One writer: the alloc and its claim land in the same write.
	must.NoError(t, s.ApplyPlan(11, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{p1},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
	vol, err := s.CSIVolumeByID(nil, "", "snw")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, "p1")
	must.EqOp(t, uint64(11), vol.ModifyIndex)
	got, err = s.AllocByID(nil, "p1")
	must.NoError(t, err)
	must.EqOp(t, uint64(11), got.CreateIndex)
}

func TestStateStore_ReleaseStartsInTheSameWrite(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	t.Run("client reports the alloc complete", func(t *testing.T) {
		s := claimWorld(t)
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{statetest.Alloc("p1", "n1")},
			Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
		must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: "p1", ClientStatus: structs.AllocClientStatusComplete}}, at))
		vol, err := s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.MapNotContainsKey(t, vol.WriteClaims, "p1")
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["p1"].State)
		must.EqOp(t, uint64(11), vol.ModifyIndex)
	})
	t.Run("client reports the alloc lost (it fenced it)", func(t *testing.T) {
		s := claimWorld(t)
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{statetest.Alloc("p1", "n1")},
			Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
		must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: "p1", ClientStatus: structs.AllocClientStatusLost,
			ClientDescription: "fenced: no server for 5s"}}, at))
		a, err := s.AllocByID(nil, "p1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus, must.Sprint("stopped, so that it may be replaced"))
		must.EqOp(t, "fenced: no server for 5s", a.ClientDescription)
		vol, err := s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["p1"].State)
	})
	t.Run("job stopped", func(t *testing.T) {
		s := claimWorld(t)
		job := &structs.Job{ID: statetest.JobID, Type: structs.JobTypeService}
		p1 := statetest.Alloc("p1", "n1")
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{p1},
			Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
		must.NoError(t, s.StopJob(11, "", statetest.JobID, false, at))
		a, err := s.AllocByID(nil, "p1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
		j, err := s.JobByID(nil, "", statetest.JobID)
		must.NoError(t, err)
		must.True(t, j.Stop)
		// The stop is desired only: the task may outlive its signal for its
		// kill timeout, so the claim stays taken until the client says the
		// tasks are dead.
		vol, err := s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.MapContainsKey(t, vol.WriteClaims, "p1", must.Sprint("a job stop alone releases nothing"))
		must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "p1", ClientStatus: structs.AllocClientStatusRunning}}, at))
		vol, err = s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.MapContainsKey(t, vol.WriteClaims, "p1", must.Sprint("still running after the stop: still taken"))
		must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "p1", ClientStatus: structs.AllocClientStatusComplete}}, at))
		vol, err = s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["p1"].State)
		must.EqOp(t, uint64(13), vol.ModifyIndex)
	})
	t.Run("job stopped, then its node goes down", func(t *testing.T) {
		s := claimWorld(t)
		job := &structs.Job{ID: statetest.JobID, Type: structs.JobTypeService}
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{statetest.Alloc("p1", "n1")},
			Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
		must.NoError(t, s.StopJob(11, "", statetest.JobID, false, at))
		must.NoError(t, s.UpdateNodeStatus(12, "n1", structs.NodeStatusDown, at.UnixNano(), nil))
		a, err := s.AllocByID(nil, "p1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocClientStatusLost, a.ClientStatus, must.Sprint("its client can no longer report it dead"))
		vol, err := s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["p1"].State)
	})
	t.Run("node goes down", func(t *testing.T) {
		s := claimWorld(t)
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{statetest.Alloc("p1", "n1")},
			Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}}))
		must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusDown, at.UnixNano(), nil))
		a, err := s.AllocByID(nil, "p1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocClientStatusLost, a.ClientStatus)
		vol, err := s.CSIVolumeByID(nil, "", "snw")
		must.NoError(t, err)
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["p1"].State)
		must.EqOp(t, uint64(11), vol.ModifyIndex)

		// Its client comes back and reports it running: it stays lost and
		// stopped (its claim is gone), with the client's task states.
		must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "p1",
			ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "tasks are running",
			TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning}}}}, at))
		a, err = s.AllocByID(nil, "p1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocClientStatusLost, a.ClientStatus)
		must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
		must.EqOp(t, "its node went down", a.ClientDescription)
		must.EqOp(t, structs.TaskStateRunning, a.TaskStates["web"].State)
	})
}

// TestStateStore_ApplyPlan_StaleJob: a placement planned without the job
// (the leader's own pass) lands only if the job is as it was planned.
func TestStateStore_ApplyPlan_StaleJob(t *testing.T) {
	s := claimWorld(t)
	job := statetest.Job(statetest.JobID)
	must.NoError(t, s.UpsertJob(20, job))
	plan := func(id string, modify uint64) *structs.PlanApplyRequest {
		return &structs.PlanApplyRequest{Allocs: []*structs.Allocation{statetest.Alloc(id, "n1")},
			JobID: statetest.JobID, JobModifyIndex: modify}
	}
	must.NoError(t, s.ApplyPlan(21, plan("p1", 20)))

	err := s.ApplyPlan(22, plan("p2", 19))
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, `plan for job "example": the job changed`)

	must.NoError(t, s.StopJob(23, "", statetest.JobID, false, time.Now()))
	j, err := s.JobByID(nil, "", statetest.JobID)
	must.NoError(t, err)
	must.ErrorIs(t, s.ApplyPlan(24, plan("p3", j.ModifyIndex)), structs.ErrConflict)
	for _, id := range []string{"p2", "p3"} {
		a, err := s.AllocByID(nil, id)
		must.NoError(t, err)
		must.Nil(t, a, must.Sprintf("alloc %s of a refused plan is not written", id))
	}
}

// A plan's raft entry carries its allocations without their job
// (PlanApplyRequest.ForRaft): the FSM gives each the job as stored, with
// the version it numbered, shared by every allocation of the plan.
func TestStateStore_ApplyPlan_AllocsGetTheStoredJob(t *testing.T) {
	s := claimWorld(t)
	job := statetest.Job(statetest.JobID)
	var allocs []*structs.Allocation
	for i := range 3 {
		a := statetest.Alloc(fmt.Sprintf("j%d", i), "n1")
		a.Job = job
		allocs = append(allocs, a)
	}
	plan := (&structs.PlanApplyRequest{Job: job, Allocs: allocs, Timestamp: 1}).ForRaft()
	for _, a := range plan.Allocs {
		must.Nil(t, a.Job, must.Sprint("the entry carries no copy of the job per allocation"))
	}
	must.NotNil(t, allocs[0].Job, must.Sprint("the plan itself is not changed"))
	must.NoError(t, s.ApplyPlan(30, plan))

	stored, err := s.JobByID(nil, "", statetest.JobID)
	must.NoError(t, err)
	for i := range 3 {
		a, err := s.AllocByID(nil, fmt.Sprintf("j%d", i))
		must.NoError(t, err)
		must.True(t, a.Job == stored, must.Sprintf("alloc j%d shares the stored job", i))
		must.EqOp(t, stored.Version, a.JobVersion)
	}
}
