package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestJobWatcher_SkipsAJobOverTheCountLimit: a job stored with a count
// over job_max_count (before the limit, or before it was lowered) is not
// placed by the leader unasked.
func TestJobWatcher_SkipsAJobOverTheCountLimit(t *testing.T) {
	s := oneNodeWorld(t, func(c *Config) { c.JobMaxCount = 10 })
	job := writerJob("old", "")
	job.Namespace = structs.DefaultNamespace
	job.TaskGroups[0].Count = 1000
	job.TaskGroups[0].Volumes = nil
	job.TaskGroups[0].Tasks[0].VolumeMounts = nil
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job})
	must.NoError(t, err)
	stored, err := s.State().JobByID(nil, structs.DefaultNamespace, "old")
	must.NoError(t, err)

	must.NoError(t, s.placeWaiting(stored))
	iter, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, "old")
	must.NoError(t, err)
	must.Nil(t, iter.Next(), must.Sprint("nothing placed"))
}
