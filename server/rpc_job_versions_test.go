package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// webJob is a service job of count 2 that mounts nothing.
func webJob(command string) *structs.Job {
	return &structs.Job{ID: "web", Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "web", Count: 2,
		Tasks: []*structs.Task{{Name: "web", Driver: "exec", Config: map[string]any{"command": command}}},
	}}}
}

// TestJob_PlanVersionsRevert, on a real raft: plan changes nothing and
// says what a run would; a run of a changed job is the next version and
// starts replacing; the versions are listed newest first; revert runs an
// old spec as the next version; errors name the job and the versions.
func TestJob_PlanVersionsRevert(t *testing.T) {
	s := oneNodeWorld(t)
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: webJob("/bin/v0")}, &reg))
	must.EqOp(t, uint64(0), reg.JobVersion)
	must.SliceLen(t, 2, reg.Placed)

	before, err := s.State().LatestIndex()
	must.NoError(t, err)
	var plan structs.JobPlanResponse
	must.NoError(t, rpcCall(t, s, "Job.Plan", &structs.JobPlanRequest{Job: webJob("/bin/v1")}, &plan))
	must.True(t, plan.Changed)
	must.EqOp(t, uint64(1), plan.JobVersion)
	must.Eq(t, []*structs.GroupChange{{TaskGroup: "web", Place: 1, Stop: 1, Replace: 1, Outdated: 1}}, plan.Groups)
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, before, after, must.Sprint("a plan writes nothing"))

	must.NoError(t, rpcCall(t, s, "Job.Plan", &structs.JobPlanRequest{Job: webJob("/bin/v0")}, &plan))
	must.False(t, plan.Changed)
	must.SliceEmpty(t, plan.Stopped)

	reg = structs.JobRegisterResponse{}
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: webJob("/bin/v1")}, &reg))
	must.EqOp(t, uint64(1), reg.JobVersion)
	must.SliceLen(t, 1, reg.Stopped)

	var versions structs.JobVersionsResponse
	must.NoError(t, rpcCall(t, s, "Job.Versions", &structs.JobSpecificRequest{JobID: "web"}, &versions))
	must.SliceLen(t, 2, versions.Versions)
	must.EqOp(t, uint64(1), versions.Versions[0].Version)
	must.Eq(t, "/bin/v0", versions.Versions[1].TaskGroups[0].Tasks[0].Config["command"])

	reg = structs.JobRegisterResponse{}
	must.NoError(t, rpcCall(t, s, "Job.Revert", &structs.JobRevertRequest{JobID: "web", Version: 0}, &reg))
	must.EqOp(t, uint64(2), reg.JobVersion, must.Sprint("a revert is the next version"))
	stored, err := s.State().JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.Eq(t, "/bin/v0", stored.TaskGroups[0].Tasks[0].Config["command"])

	err = rpcCall(t, s, "Job.Revert", &structs.JobRevertRequest{JobID: "web", Version: 9}, &reg)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.ErrorContains(t, err, `job "web" has no version 9 kept; its versions are 2, 1 and 0`)
	err = rpcCall(t, s, "Job.Versions", &structs.JobSpecificRequest{JobID: "nope"}, &versions)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.ErrorContains(t, err, `job "nope" not found`)
}

// TestJob_Plan_NewAndStoppedJob: a plan of a job not stored is a change
// to version 0; of a stopped job with the same spec, a change (it runs
// again) that keeps the stored version; with another spec, the next one.
func TestJob_Plan_NewAndStoppedJob(t *testing.T) {
	s := oneNodeWorld(t)
	var plan structs.JobPlanResponse
	must.NoError(t, rpcCall(t, s, "Job.Plan", &structs.JobPlanRequest{Job: webJob("/bin/v0")}, &plan))
	must.True(t, plan.Changed)
	must.EqOp(t, uint64(0), plan.JobVersion)

	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: webJob("/bin/v0")}, &reg))
	var dereg structs.JobDeregisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web"}, &dereg))

	plan = structs.JobPlanResponse{}
	must.NoError(t, rpcCall(t, s, "Job.Plan", &structs.JobPlanRequest{Job: webJob("/bin/v0")}, &plan))
	must.True(t, plan.Changed, must.Sprint("a stopped job runs again"))
	must.EqOp(t, uint64(0), plan.JobVersion, must.Sprint("the same spec is the same version"))

	plan = structs.JobPlanResponse{}
	must.NoError(t, rpcCall(t, s, "Job.Plan", &structs.JobPlanRequest{Job: webJob("/bin/v1")}, &plan))
	must.True(t, plan.Changed)
	must.EqOp(t, uint64(1), plan.JobVersion)
}
