package server

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// TestJob_Register_NullEntriesAreBadRequests: null tasks, volume mounts
// and volumes are a 400 naming them, never a panic, and nothing is
// registered.
func TestJob_Register_NullEntriesAreBadRequests(t *testing.T) {
	s := oneNodeWorld(t)
	cases := []struct {
		name string
		edit func(j *structs.Job)
		want string
	}{
		{"null group", func(j *structs.Job) { j.TaskGroups = append(j.TaskGroups, nil) }, `job "web": group 1 is null`},
		{"null task", func(j *structs.Job) { j.TaskGroups[0].Tasks = []*structs.Task{nil} }, `group "db": task 0 is null`},
		{"null volume mount", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{nil} },
			`group "db": task "db": volume_mount 0 is null`},
		{"null volume", func(j *structs.Job) { j.TaskGroups[0].Volumes["a"] = nil }, `group "db": volume "a" is null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := writerJob("web", "data")
			tc.edit(job)
			err := rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
			got, err := s.State().JobByID(nil, structs.DefaultNamespace, "web")
			must.NoError(t, err)
			must.Nil(t, got)
		})
	}
}

// TestJob_Register_CountOverTheLimit: a count over the servers'
// job_max_count is a 400 naming count and the limit, before any
// placement; the counts of all groups add up.
// TestJob_Register_JobWeight: a job whose allocations would carry more
// copies of it than one placement write or node list may hold is a 400
// before any placement; the same job with a lower count is placed.
func TestJob_Register_JobWeight(t *testing.T) {
	s := oneNodeWorld(t)
	job := writerJob("web", "data")
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"PAD": strings.Repeat("x", 512<<10)}
	job.TaskGroups[0].Count = 20                                                                   // 20 × ~512 KiB = ~10 MiB
	job.TaskGroups[0].Volumes["data"].AccessMode = structs.CSIVolumeAccessModeMultiNodeMultiWriter // shared by the 20
	// The leader's own writes (its first root key) may land meanwhile:
	// what must not move is the jobs' and allocations' tables.
	tables := func() [2]uint64 {
		jobs, err := s.State().Index(state.TableJobs)
		must.NoError(t, err)
		allocs, err := s.State().Index(state.TableAllocs)
		must.NoError(t, err)
		return [2]uint64{jobs, allocs}
	}
	before := tables()
	err := rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), `job "web": 20 allocations of a `)
	must.StrContains(t, err.Error(), "over the 8 MiB")
	must.Eq(t, before, tables(), must.Sprint("a refused job writes nothing"))

	job.TaskGroups[0].Count = 1
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
}

func TestJob_Register_CountOverTheLimit(t *testing.T) {
	s := oneNodeWorld(t, func(c *Config) { c.JobMaxCount = 10 })
	job := writerJob("web", "data")
	job.TaskGroups[0].Count = 2147483648
	job.TaskGroups[0].Volumes["data"].AccessMode = structs.CSIVolumeAccessModeMultiNodeMultiWriter // shared by them all
	err := rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), `group "db": count 2147483648 is over this cluster's limit of 10 allocations per job`)

	job.TaskGroups[0].Count = 6
	two := job.TaskGroups[0].Copy()
	two.Name = "db2"
	job.TaskGroups = append(job.TaskGroups, two)
	err = rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.True(t, strings.Contains(err.Error(), "counts add up to more than this cluster's limit of 10"), must.Sprint(err))

	job.TaskGroups[1].Count = 4
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
}
