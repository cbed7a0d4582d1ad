package state_test

import (
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_UpsertJob(t *testing.T) {
	s := statetest.New(t)
	job := statetest.Job("web")
	job.Namespace = ""
	must.NoError(t, s.UpsertJob(10, job))
	must.Eq(t, "", job.Namespace, must.Sprint("the caller's job must not be changed"))

	update := statetest.Job("web")
	update.TaskGroups[0].Count = 3
	must.NoError(t, s.UpsertJob(11, update))

	got, err := s.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.NotNil(t, got)
	must.Eq(t, structs.DefaultNamespace, got.Namespace)
	must.Eq(t, uint64(10), got.CreateIndex)
	must.Eq(t, uint64(11), got.ModifyIndex)
	must.Eq(t, 3, got.TaskGroups[0].Count)
	must.Eq(t, uint64(11), mustIndex(t, s, state.TableJobs))

	other, err := s.JobByID(nil, "prod", "web")
	must.NoError(t, err)
	must.Nil(t, other)
}

func TestStateStore_UpsertJob_Invalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *structs.Job
	}{
		{"nil job", nil},
		{"missing id", statetest.Job("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			mustCode(t, structs.ErrBadRequest, s.UpsertJob(10, tc.job))
			must.Eq(t, uint64(0), mustIndex(t, s, state.TableJobs))
		})
	}
}

func TestStateStore_JobPluginCleanup(t *testing.T) {
	type op int
	const (
		purgeJob op = iota // StopJob with purge: the job is deleted
		stopJob
		dropPlugin // upsert the job without its plugin task
	)
	cases := []struct {
		name       string
		withNode   bool // a node still runs the plugin
		otherJob   bool // a second job runs the plugin
		op         op
		wantPlugin bool
	}{
		{name: "purge: last user", op: purgeJob},
		{name: "purge: node instance remains", withNode: true, op: purgeJob, wantPlugin: true},
		{name: "purge: another job runs it", otherJob: true, op: purgeJob, wantPlugin: true},
		{name: "stop: last user", op: stopJob},
		{name: "stop: node instance remains", withNode: true, op: stopJob, wantPlugin: true},
		{name: "plugin task removed", op: dropPlugin},
		{name: "plugin task removed, another job runs it", otherJob: true, op: dropPlugin, wantPlugin: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			must.NoError(t, s.UpsertJob(10, statetest.PluginJob("plug-job", plugID)))
			if tc.otherJob {
				must.NoError(t, s.UpsertJob(11, statetest.PluginJob("plug-job-2", plugID)))
			}
			// The plugin ran on n1, which then left, so only jobs and
			// perhaps n2 hold the row.
			upsertNodes(t, s, 12, statetest.NodeWithPlugin("n1", plugID, true, true, true))
			if tc.withNode {
				upsertNodes(t, s, 13, statetest.NodeWithPlugin("n2", plugID, false, true, true))
			}
			must.NoError(t, s.DeleteNode(14, []string{"n1"}))
			mustPlugin(t, s, plugID)

			switch tc.op {
			case purgeJob:
				must.NoError(t, s.StopJob(20, structs.DefaultNamespace, "plug-job", true, time.Unix(100, 0)))
			case stopJob:
				j := statetest.PluginJob("plug-job", plugID)
				j.Stop = true
				must.NoError(t, s.UpsertJob(20, j))
			case dropPlugin:
				must.NoError(t, s.UpsertJob(20, statetest.Job("plug-job")))
			}

			plug, err := s.CSIPluginByID(nil, plugID)
			must.NoError(t, err)
			must.Eq(t, tc.wantPlugin, plug != nil)
			must.Eq(t, uint64(20), mustIndex(t, s, state.TableJobs))
			if !tc.wantPlugin {
				must.Eq(t, uint64(20), mustIndex(t, s, state.TableCSIPlugins))
			}
		})
	}
}

// TestStateStore_StopJob_Purge: a purge deletes the job, found by its
// namespace (the default when none is given); an unknown job is NOT_FOUND.
func TestStateStore_StopJob_Purge(t *testing.T) {
	cases := []struct {
		name string
		ns   string
		id   string
		want error
	}{
		{name: "exists", ns: structs.DefaultNamespace, id: "web"},
		{name: "namespace defaults", ns: "", id: "web"},
		{name: "unknown job", ns: structs.DefaultNamespace, id: "nope", want: structs.ErrNotFound},
		{name: "other namespace", ns: "prod", id: "web", want: structs.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			must.NoError(t, s.UpsertJob(10, statetest.Job("web")))
			mustCode(t, tc.want, s.StopJob(11, tc.ns, tc.id, true, time.Unix(100, 0)))
			got, err := s.JobByID(nil, structs.DefaultNamespace, "web")
			must.NoError(t, err)
			must.Eq(t, tc.want != nil, got != nil)
		})
	}
}
