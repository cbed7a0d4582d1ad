package state_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestJobVersions: a job keeps its version while its spec is the same,
// takes the next one when it changes, keeps the last JobVersionsKept, and
// loses them all when purged.
func TestJobVersions(t *testing.T) {
	s := statetest.New(t)
	index := uint64(10)
	register := func(j *structs.Job) *structs.Job {
		t.Helper()
		index++
		must.NoError(t, s.ApplyPlan(index, &structs.PlanApplyRequest{Job: j}))
		stored, err := s.JobByID(nil, "", j.ID)
		must.NoError(t, err)
		return stored
	}
	v0 := statetest.Job("web")
	v0.SubmitTime = 100
	must.EqOp(t, uint64(0), register(v0).Version)

	again := v0.Copy()
	again.SubmitTime = 200
	stored := register(again)
	must.EqOp(t, uint64(0), stored.Version, must.Sprint("the same spec is the same version"))
	must.EqOp(t, int64(100), stored.SubmitTime, must.Sprint("submitted when it first was"))

	for i := 1; i <= 7; i++ {
		j := v0.Copy()
		j.TaskGroups[0].Count = i + 1
		must.EqOp(t, uint64(i), register(j).Version)
	}
	versions, err := s.JobVersions(nil, "", "web")
	must.NoError(t, err)
	must.SliceLen(t, 6, versions)
	must.EqOp(t, uint64(7), versions[0].Version, must.Sprint("newest first"))
	must.EqOp(t, uint64(2), versions[5].Version)
	old, err := s.JobVersion(nil, "", "web", 3)
	must.NoError(t, err)
	must.EqOp(t, 4, old.TaskGroups[0].Count)
	gone, err := s.JobVersion(nil, "", "web", 1)
	must.NoError(t, err)
	must.Nil(t, gone)

	other := statetest.Job("web2")
	register(other)
	index++
	must.NoError(t, s.StopJob(index, "", "web", true, time.Now()))
	versions, err = s.JobVersions(nil, "", "web")
	must.NoError(t, err)
	must.SliceEmpty(t, versions, must.Sprint("a purged job keeps no versions"))
	versions, err = s.JobVersions(nil, "", "web2")
	must.NoError(t, err)
	must.SliceLen(t, 1, versions, must.Sprint("web2's are its own, not a prefix match of web's"))
}

// TestApplyPlan_Stops: a plan stops its job's allocations with their
// reason, stamps the new ones with the job's version and the plan's time,
// and refuses to stop another job's allocation.
func TestApplyPlan_Stops(t *testing.T) {
	s := statetest.New(t)
	job := statetest.Job("web")
	a0 := statetest.Alloc("a0", "n1")
	a0.Job, a0.JobID = job, job.ID
	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{a0}, Timestamp: 5}))
	got, err := s.AllocByID(nil, "a0")
	must.NoError(t, err)
	must.EqOp(t, int64(5), got.CreateTime)

	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "1"}
	a1 := statetest.Alloc("a1", "n1")
	a1.Job, a1.JobID = v1, v1.ID
	must.NoError(t, s.ApplyPlan(11, &structs.PlanApplyRequest{Job: v1, Allocs: []*structs.Allocation{a1},
		Stops: []structs.AllocStop{{AllocID: "a0", Description: structs.UpdateDescription(1)}}, Timestamp: 6}))
	got, err = s.AllocByID(nil, "a0")
	must.NoError(t, err)
	must.EqOp(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.EqOp(t, "replaced by job version 1", got.DesiredDescription)
	got, err = s.AllocByID(nil, "a1")
	must.NoError(t, err)
	must.EqOp(t, uint64(1), got.JobVersion)
	must.EqOp(t, uint64(1), got.Job.Version)

	other := statetest.Job("other")
	err = s.ApplyPlan(12, &structs.PlanApplyRequest{Job: other, Stops: []structs.AllocStop{{AllocID: "a1"}}})
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, "allocation a1 to stop is not the job's")
	j, err := s.JobByID(nil, "", "other")
	must.NoError(t, err)
	must.Nil(t, j, must.Sprint("nothing of a refused plan is written"))
}

// TestUpdateAllocsFromClient_RunningSince: the time an allocation became
// running is the entry's, kept while it runs, cleared when it stops.
func TestUpdateAllocsFromClient_RunningSince(t *testing.T) {
	s := statetest.New(t)
	job := statetest.Job("web")
	a := statetest.Alloc("a0", "n1")
	a.Job, a.JobID = job, job.ID
	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{a}}))
	report := func(index uint64, status string, at int64) int64 {
		t.Helper()
		must.NoError(t, s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: "a0", ClientStatus: status}}, time.Unix(0, at)))
		got, err := s.AllocByID(nil, "a0")
		must.NoError(t, err)
		return got.RunningSince
	}
	must.EqOp(t, int64(0), report(11, structs.AllocClientStatusPending, 100))
	must.EqOp(t, int64(200), report(12, structs.AllocClientStatusRunning, 200))
	must.EqOp(t, int64(200), report(13, structs.AllocClientStatusRunning, 300), must.Sprint("still running since 200"))
	must.EqOp(t, int64(0), report(14, structs.AllocClientStatusFailed, 400))
}
