package command

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/berth-csi/berth/structs"
)

// The fixture's jobs and allocations. writer is examples/hostpath-job.hcl
// running on node1 (alloc1 holds the write claim on volume data); plugin
// is the hostpath plugin (alloc2); nightly a batch job that completed;
// reporter a stopped job whose allocation was lost with a node that has
// left the cluster, its claim on data2 stuck; shards a per_alloc group
// whose second volume does not exist. The jobs web, crash, report, sys,
// nospace and partial exist only to be run: registering one answers as
// the scheduler would, and its allocations then move through stages.

const (
	alloc3     = "a11c0003-cccc-4c4c-8888-00000000000c"
	alloc4     = "a11c0004-dddd-4c4c-8888-00000000000d"
	allocShard = "5a4d0001-eeee-4c4c-8888-00000000000e"
	allocCrash = "c4a50001-ffff-4c4c-8888-00000000000f"
	allocFlaky = "f1a50001-eeee-4c4c-8888-00000000000e"
	allocLate  = "1a7e0001-dddd-4c4c-8888-00000000000d"
	allocWeb   = "b0000001-1111-4c4c-8888-000000000010"
	allocRep1  = "b0000002-2222-4c4c-8888-000000000011"
	allocRep2  = "b0000003-3333-4c4c-8888-000000000012"
	allocSys1  = "b0000004-4444-4c4c-8888-000000000013"
	allocSys3  = "b0000005-5555-4c4c-8888-000000000014"
	goneNode   = "dead5eed-4444-4c4c-8888-000000000004"

	// jobRegisterIndex is what every register answers with; run stages
	// follow it.
	jobRegisterIndex = 100
)

func execTask(name, command string, args ...string) *structs.Task {
	return &structs.Task{Name: name, Driver: "exec",
		Config:      map[string]any{"command": command, "args": args},
		KillTimeout: 5 * time.Second,
		Restart:     &structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}}
}

func csiRequest(source string, mode structs.CSIVolumeAccessMode, readOnly, perAlloc bool) *structs.VolumeRequest {
	return &structs.VolumeRequest{Name: source, Type: "csi", Source: source, ReadOnly: readOnly, PerAlloc: perAlloc,
		AccessMode: mode, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
}

func fixtureJobs() []*structs.Job {
	writer := execTask("writer", "/bin/sh", "-c", "date >> /data/out.txt; sleep 3600")
	writer.VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: "/data", PropagationMode: "private"}}
	plugin := execTask("plugin", "berth-hostpath", "-root", "/var/lib/berth-hostpath")
	plugin.CSIPluginConfig = &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith,
		MountDir: "/csi", HealthTimeout: int64(30 * time.Second)}
	return []*structs.Job{
		{ID: "nightly", Name: "nightly", Type: structs.JobTypeBatch, CreateIndex: 30, ModifyIndex: 30,
			TaskGroups: []*structs.TaskGroup{{Name: "backup", Count: 1,
				Volumes: map[string]*structs.VolumeRequest{"src": csiRequest("data2", structs.CSIVolumeAccessModeMultiNodeReader, true, false)},
				Tasks:   []*structs.Task{execTask("backup", "/usr/bin/tar", "-C", "/src", "-cf", "/tmp/b.tar", ".")}}}},
		{ID: "plugin", Name: "plugin", Type: structs.JobTypeSystem, CreateIndex: 20, ModifyIndex: 20,
			TaskGroups: []*structs.TaskGroup{{Name: "hostpath", Count: 1, Tasks: []*structs.Task{plugin}}}},
		{ID: "reporter", Name: "reporter", Type: structs.JobTypeService, Stop: true, CreateIndex: 40, ModifyIndex: 44,
			TaskGroups: []*structs.TaskGroup{{Name: "report", Count: 1,
				Volumes: map[string]*structs.VolumeRequest{"out": csiRequest("data2", structs.CSIVolumeAccessModeSingleNodeWriter, false, false)},
				Tasks:   []*structs.Task{execTask("report", "/bin/report")}}}},
		{ID: "shards", Name: "shards", Type: structs.JobTypeService, CreateIndex: 50, ModifyIndex: 50,
			TaskGroups: []*structs.TaskGroup{{Name: "db", Count: 2,
				Volumes: map[string]*structs.VolumeRequest{
					"data": csiRequest("data", structs.CSIVolumeAccessModeSingleNodeWriter, false, true),
					"logs": csiRequest("logs", structs.CSIVolumeAccessModeMultiNodeMultiWriter, false, false),
				},
				Tasks: []*structs.Task{execTask("db", "/bin/db"), execTask("backup", "/bin/backup")}}}},
		{ID: "writer", Name: "writer", Type: structs.JobTypeService, CreateIndex: 10, ModifyIndex: 10,
			TaskGroups: []*structs.TaskGroup{{Name: "writer", Count: 1,
				Volumes: map[string]*structs.VolumeRequest{"data": csiRequest("data", structs.CSIVolumeAccessModeSingleNodeWriter, false, false)},
				Tasks:   []*structs.Task{writer}}}},
	}
}

var fixtureJobStatus = map[string]string{"nightly": "dead", "plugin": "running", "reporter": "dead", "shards": "pending", "writer": "running"}

func jobStub(j *structs.Job) *structs.JobListStub {
	return &structs.JobListStub{ID: j.ID, Namespace: j.Namespace, Name: j.Name, Type: j.Type, Stop: j.Stop,
		Status: fixtureJobStatus[j.ID], CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex}
}

func findJob(id string) *structs.Job {
	for _, j := range fixtureJobs() {
		if j.ID == id {
			return j
		}
	}
	return nil
}

func event(typ, msg string, minutes int) *structs.TaskEvent {
	return &structs.TaskEvent{Type: typ, Message: msg, Time: fixtureTime.Add(time.Duration(minutes) * time.Minute)}
}

func fixtureAllocs() []*structs.Allocation {
	crash := &structs.Job{ID: "crash", Name: "crash", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "crash", Count: 1, Tasks: []*structs.Task{execTask("server", "/bin/false")}}}}
	return []*structs.Allocation{
		{ID: alloc1, Name: "writer.writer[0]", JobID: "writer", TaskGroup: "writer", NodeID: node1,
			DesiredStatus: "run", ClientStatus: "running", ClientDescription: "Tasks are running",
			Job: findJob("writer"), CreateIndex: 11, ModifyIndex: 14,
			TaskStates: map[string]*structs.TaskState{"writer": {State: "running", StartedAt: fixtureTime.Add(2 * time.Minute),
				Events: []*structs.TaskEvent{
					event("Received", "Task received by client", 0),
					event("Volume Staged", `volume "data" staged and published at /data`, 1),
					event("Started", "Task started by client", 2),
				}}},
			Timeline: structs.Timeline{{Step: structs.StepPlaced, At: fixtureTime},
				{Step: structs.StepReceived, At: fixtureTime.Add(12 * time.Millisecond)},
				{Step: structs.StepVolumesMounted, At: fixtureTime.Add(40 * time.Millisecond)},
				{Step: structs.StepTasksStarted, At: fixtureTime.Add(55500 * time.Microsecond)}}},
		{ID: alloc2, Name: "plugin.hostpath[0]", JobID: "plugin", TaskGroup: "hostpath", NodeID: node1,
			DesiredStatus: "run", ClientStatus: "running", Job: findJob("plugin"), CreateIndex: 21, ModifyIndex: 22,
			TaskStates: map[string]*structs.TaskState{"plugin": {State: "running", StartedAt: fixtureTime,
				Events: []*structs.TaskEvent{event("Started", "Task started by client", 0), event("Plugin Healthy", `plugin "hostpath" became healthy`, 1)}}}},
		{ID: alloc3, Name: "nightly.backup[0]", JobID: "nightly", TaskGroup: "backup", NodeID: node3,
			DesiredStatus: "run", ClientStatus: "complete", ClientDescription: "All tasks have completed",
			Job: findJob("nightly"), CreateIndex: 31, ModifyIndex: 35,
			TaskStates: map[string]*structs.TaskState{"backup": {State: "dead", StartedAt: fixtureTime, FinishedAt: fixtureTime.Add(3 * time.Minute),
				Events: []*structs.TaskEvent{event("Started", "Task started by client", 0), event("Terminated", "exit code 0", 3)}}}},
		{ID: alloc4, Name: "reporter.report[0]", JobID: "reporter", TaskGroup: "report", NodeID: goneNode,
			DesiredStatus: "stop", ClientStatus: "lost", ClientDescription: "node " + goneNode + " is down",
			Job: findJob("reporter"), CreateIndex: 41, ModifyIndex: 44,
			TaskStates: map[string]*structs.TaskState{"report": {State: "running", StartedAt: fixtureTime}}},
		{ID: allocShard, Name: "shards.db[1]", JobID: "shards", TaskGroup: "db", NodeID: node3,
			DesiredStatus: "run", ClientStatus: "pending", Job: findJob("shards"), CreateIndex: 51, ModifyIndex: 51},
		{ID: allocCrash, Name: "crash.crash[0]", JobID: "crash", TaskGroup: "crash", NodeID: node1,
			DesiredStatus: "run", ClientStatus: "failed", ClientDescription: "Failed tasks",
			Job: crash, CreateIndex: jobRegisterIndex, ModifyIndex: 104,
			TaskStates: map[string]*structs.TaskState{"server": {State: "dead", Failed: true, Restarts: 2,
				StartedAt: fixtureTime, FinishedAt: fixtureTime.Add(time.Minute),
				Events: []*structs.TaskEvent{
					event("Started", "Task started by client", 0),
					event("Terminated", "exit code 1", 0),
					event("Restarting", "restart 2 of 2 in 15s", 0),
					event("Terminated", "exit code 1", 1),
					event("Not Restarting", "exceeded 2 restarts in 30m0s; restart mode is \"fail\"", 1),
				}}}},
	}
}

// runStages are the successive allocation lists of the jobs that exist
// to be run: stage i answers with index jobRegisterIndex+1+i.
func runStages() map[string][][]*structs.AllocListStub {
	stub := func(id, job, group, node, status string) *structs.AllocListStub {
		return &structs.AllocListStub{ID: id, JobID: job, TaskGroup: group, NodeID: node, DesiredStatus: "run",
			ClientStatus: status, CreateIndex: jobRegisterIndex, ModifyIndex: jobRegisterIndex}
	}
	return map[string][][]*structs.AllocListStub{
		"web": {
			{stub(allocWeb, "web", "web", node1, "pending")},
			{stub(allocWeb, "web", "web", node1, "pending")},
			{stub(allocWeb, "web", "web", node1, "running")},
		},
		"crash": {
			{stub(allocCrash, "crash", "crash", node1, "pending")},
			{stub(allocCrash, "crash", "crash", node1, "failed")},
		},
		// A plugin job whose plugin registers after its allocation runs.
		"late": {
			{stub(allocLate, "late", "g", node1, "running")},
		},
		// A task that exits once and restarts after a backoff: the
		// allocation stays pending while its events change.
		"flaky": {
			{stub(allocFlaky, "flaky", "flaky", node1, "pending")},
			{modified(stub(allocFlaky, "flaky", "flaky", node1, "pending"), 2)},
			{modified(stub(allocFlaky, "flaky", "flaky", node1, "pending"), 2)},
			{modified(stub(allocFlaky, "flaky", "flaky", node1, "running"), 3)},
		},
		"report": {
			{stub(allocRep1, "report", "report", node1, "pending"), stub(allocRep2, "report", "report", node3, "pending")},
			{stub(allocRep1, "report", "report", node1, "running"), stub(allocRep2, "report", "report", node3, "complete")},
			{stub(allocRep1, "report", "report", node1, "complete"), stub(allocRep2, "report", "report", node3, "complete")},
		},
		"sys": {
			{stub(allocSys1, "sys", "agent", node1, "running"), stub(allocSys3, "sys", "agent", node3, "running")},
		},
		"partial": {
			{stub(allocWeb, "partial", "db", node1, "pending")},
		},
	}
}

// modified sets a stub's ModifyIndex n after the register's.
func modified(a *structs.AllocListStub, n uint64) *structs.AllocListStub {
	a.ModifyIndex = jobRegisterIndex + n
	return a
}

// flakyAlloc is the allocation of job "flaky" once its task exited and
// waits to restart.
func flakyAlloc() *structs.Allocation {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 12, 0, s, 0, time.UTC) }
	return &structs.Allocation{ID: allocFlaky, JobID: "flaky", TaskGroup: "flaky", NodeID: node1,
		DesiredStatus: "run", ClientStatus: "pending", ModifyIndex: jobRegisterIndex + 2,
		TaskStates: map[string]*structs.TaskState{"server": {State: "pending", Events: []*structs.TaskEvent{
			{Type: "Received", Time: at(0)},
			{Type: "Started", Time: at(1)},
			{Type: "Terminated", Message: "exit code 1", Time: at(2)},
			{Type: "Restarting", Message: "restart 1 of 2 in 15s", Time: at(2)},
		}}}}
}

// jobRoutes answers the job, allocation and log routes, and volume detach.
func (f *fixture) jobRoutes(mux *http.ServeMux) {
	// Plugin "late" is not registered for its first two reads.
	var lateReads atomic.Int32
	mux.HandleFunc("GET /v1/plugin/csi/late", func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		if lateReads.Add(1) <= 2 {
			replyError(w, 404, "NotFound", `plugin "late" not found`)
			return
		}
		reply(w, 61, &structs.CSIPlugin{ID: "late", ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 1})
	})
	mux.HandleFunc("GET /v1/allocation/"+allocFlaky, func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		reply(w, jobRegisterIndex+2, flakyAlloc())
	})
	jobID := func(j *structs.Job) string { return j.ID }
	mux.HandleFunc("GET /v1/jobs", listRoute(90, fixtureJobs, jobID, jobStub))
	mux.HandleFunc("GET /v1/job/{id}", getRoute(90, "job", fixtureJobs, jobID))
	allocID := func(a *structs.Allocation) string { return a.ID }
	mux.HandleFunc("GET /v1/allocations", listRoute(95, fixtureAllocs, allocID, (*structs.Allocation).Stub))
	mux.HandleFunc("GET /v1/allocation/{id}", getRoute(95, "allocation", fixtureAllocs, allocID))

	mux.HandleFunc("GET /v1/job/{id}/allocations", func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		id := r.PathValue("id")
		if stages, ok := runStages()[id]; ok {
			index, _ := strconv.Atoi(r.URL.Query().Get("index"))
			i := max(0, index-jobRegisterIndex)
			if i >= len(stages) {
				i = len(stages) - 1
			}
			reply(w, jobRegisterIndex+1+i, stages[i])
			return
		}
		if findJob(id) == nil {
			replyError(w, 404, "NotFound", `job "`+id+`" not found`)
			return
		}
		var out []*structs.AllocListStub
		for _, a := range fixtureAllocs() {
			if a.JobID == id {
				out = append(out, a.Stub())
			}
		}
		reply(w, 96, nonNil(out))
	})

	mux.HandleFunc("PUT /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		body := f.record(r)
		var req struct{ Job *structs.Job }
		if err := json.Unmarshal(body, &req); err != nil || req.Job == nil {
			replyError(w, 400, "BadRequest", "fixture: bad job register body")
			return
		}
		resp := &structs.JobRegisterResponse{WriteMeta: structs.WriteMeta{Index: jobRegisterIndex}}
		switch id := req.Job.ID; id {
		case "bad":
			replyError(w, 400, "BadRequest", `job "bad": group "g": volume "data": volume "nope" is not registered; register or create it first`)
			return
		case "nospace":
			resp.Failures = []*structs.PlacementFailure{{TaskGroup: "db", Missing: 2, Reasons: []string{
				`volume "data" (single-node-writer) is claimed for writing by alloc a11c0001 on node 8a1c2f3e`,
				"node 8a1c9d00 is down",
			}}}
		case "writer":
			placed := findAllocStub(alloc1)
			placed.ClientStatus = "pending"
			resp.Placed = []*structs.AllocListStub{placed}
		default:
			if stages, ok := runStages()[id]; ok {
				for _, a := range stages[0] {
					if a.ClientStatus == "pending" {
						resp.Placed = append(resp.Placed, a)
					}
				}
			}
			if id == "partial" {
				resp.Failures = []*structs.PlacementFailure{{TaskGroup: "db", Missing: 1,
					Reasons: []string{`no node has a healthy node plugin "hostpath"`}}}
			}
		}
		reply(w, jobRegisterIndex, resp)
	})
	mux.HandleFunc("DELETE /v1/job/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if findJob(r.PathValue("id")) == nil {
			replyError(w, 404, "NotFound", `job "`+r.PathValue("id")+`" not found`)
			return
		}
		reply(w, 97, &structs.JobDeregisterResponse{WriteMeta: structs.WriteMeta{Index: 97}})
	})

	mux.HandleFunc("GET /v1/client/fs/logs/{alloc}", func(w http.ResponseWriter, r *http.Request) {
		f.recordRead(r)
		var alloc *structs.Allocation
		for _, a := range fixtureAllocs() {
			if a.ID == r.PathValue("alloc") {
				alloc = a
			}
		}
		if alloc == nil {
			replyError(w, 404, "NotFound", `allocation "`+r.PathValue("alloc")+`" not found`)
			return
		}
		task := r.URL.Query().Get("task")
		var names []string
		found := false
		for _, t := range alloc.LookupTaskGroup().Tasks {
			names = append(names, strconv.Quote(t.Name))
			found = found || t.Name == task
		}
		if !found {
			replyError(w, 404, "NotFound", `allocation "`+alloc.ID+`" has no task "`+task+`"; its tasks are `+strings.Join(names, ", "))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Query().Get("type") == "stderr" {
			_, _ = w.Write([]byte("sh: /data/out.txt: warning\n"))
			return
		}
		_, _ = w.Write([]byte("Sun Mar  1 12:02:00 UTC 2026\n"))
	})

	mux.HandleFunc("DELETE /v1/volume/csi/{id}/detach", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		node := r.URL.Query().Get("node")
		if node == "" {
			replyError(w, 400, "BadRequest", "query parameter node is required")
			return
		}
		for _, v := range fixtureVolumes() {
			if v.ID != r.PathValue("id") {
				continue
			}
			released := []string{}
			for _, id := range v.ClaimingAllocs() {
				c := v.ClaimOf(id)
				if c.NodeID == node {
					released = append(released, id)
				}
			}
			reply(w, 98, &structs.CSIVolumeDetachResponse{Released: released, WriteMeta: structs.WriteMeta{Index: 98}})
			return
		}
		replyError(w, 404, "NotFound", `volume "`+r.PathValue("id")+`" not found`)
	})
}

func findAllocStub(id string) *structs.AllocListStub {
	for _, a := range fixtureAllocs() {
		if a.ID == id {
			return a.Stub()
		}
	}
	return nil
}
