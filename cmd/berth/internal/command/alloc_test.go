package command

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestAllocStatus_Output(t *testing.T) {
	f := newFixture(t)
	at := func(minutes int) string { return formatTime(fixtureTime.Add(time.Duration(minutes) * time.Minute)) }
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string   // exact, when set
		contains   []string // in stdout
		wantStderr string
	}{
		{
			name: "running, with its claim",
			args: []string{"alloc", "status", "a11c0001"},
			wantStdout: `ID                 = ` + alloc1 + `
Name               = writer.writer[0]
Node ID            = 8a1c2f3e
Job ID             = writer
Task Group         = writer
Desired Status     = run
Client Status      = running
Client Description = Tasks are running
Job Version        = 0

Task "writer" is "running"
Started At     = ` + at(2) + `
Finished At    = <none>
Total Restarts = 0
Failed         = false

Recent Events:
Time                  Type           Message
` + at(2) + `  Started        Task started by client
` + at(1) + `  Volume Staged  volume "data" staged and published at /data
` + at(0) + `  Received       Task received by client

CSI Volumes
Volume  Volume ID  Plugin ID  Access Mode         Claim Mode  Claim State  Node ID
data    data       hostpath   single-node-writer  write       taken        8a1c2f3e
`,
		},
		{
			name: "verbose: the timeline of its steps and its claim's, in time order",
			args: []string{"alloc", "status", "-verbose", "a11c0001"},
			contains: []string{"\nTimeline\n" +
				"Step                       Time          Gap       Since First\n" +
				"placed                     " + clock(0) + "  -         -\n" +
				"claim-taken (volume data)  " + clock(0) + "  +0.0 ms   0.0 ms\n" +
				"received                   " + clock(12*time.Millisecond) + "  +12.0 ms  12.0 ms\n" +
				"volumes-mounted            " + clock(40*time.Millisecond) + "  +28.0 ms  40.0 ms\n" +
				"tasks-started              " + clock(55500*time.Microsecond) + "  +15.5 ms  55.5 ms\n"},
		},
		{
			name: "lost, its claim stuck on a node that is gone",
			args: []string{"alloc", "status", "-verbose", "a11c0004"},
			contains: []string{
				"Node ID            = " + goneNode + "\n",
				"Client Status      = lost\n",
				"Recent Events:\nNo events\n",
				"Volume  Volume ID  Plugin ID  Access Mode         Claim Mode  Claim State   Node ID                               Attempts  Last Error\n" +
					"out     data2      hostpath   single-node-writer  write       unpublishing  " + goneNode + "  5         node unpublish: node " + goneNode + " is down\n",
			},
		},
		{
			name: "pending, per_alloc volume missing, another not claimed",
			args: []string{"alloc", "status", "5a4d"},
			contains: []string{
				"Task \"db\" is \"pending\"\nNo events yet\n\nTask \"backup\" is \"pending\"\nNo events yet\n",
				"data    data[1]    -          single-node-writer       -           volume not found  -\n",
				"logs    logs       hostpath   multi-node-multi-writer  -           not claimed       -\n",
			},
		},
		{
			name: "failed task",
			args: []string{"alloc", "status", "c4a5"},
			contains: []string{
				"Client Status      = failed\n",
				"Task \"server\" is \"dead\"\n",
				"Total Restarts = 2\nFailed         = true\n",
				at(1) + "  Not Restarting  exceeded 2 restarts in 30m0s; restart mode is \"fail\"\n",
			},
		},
		{name: "no volumes section without volumes", args: []string{"alloc", "status", alloc2},
			contains: []string{"Task \"plugin\" is \"running\""}},
		{name: "ambiguous", args: []string{"alloc", "status", "a11c"}, wantCode: 1,
			wantStderr: `Error: prefix "a11c" matches 4 allocations: ` + alloc1 + ", " + alloc2 + ", " + alloc3 + ", " + alloc4 + "; give more of the ID"},
		{name: "not found", args: []string{"alloc", "status", "ffff"}, wantCode: 1,
			wantStderr: `Error: allocation "ffff" not found; run "berth job status <job>" to list them`},
		{name: "no ID", args: []string{"alloc", "status"}, wantCode: 2,
			wantStderr: "Error: this command takes one argument\n\nUsage: berth alloc status [options] <alloc>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			mustStdout(t, r, tc.wantStdout, tc.contains)
			if tc.name == "no volumes section without volumes" {
				must.StrNotContains(t, r.stdout, "CSI Volumes")
			}
			if !slices.Contains(tc.args, "-verbose") {
				must.StrNotContains(t, r.stdout, "Timeline")
			}
		})
	}
}

func TestAllocStatus_JSON_IsTheAPIs(t *testing.T) {
	f := newFixture(t)
	r := runCLI(t, f.srv.URL, "", "alloc", "status", "-json", "a11c0001")
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	var got, want any
	must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	must.NoError(t, json.Unmarshal(fetch(t, f.srv.URL+"/v1/allocation/"+alloc1), &want))
	must.Eq(t, want, got)
}

func TestAllocLogs_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
		wantQuery  string // of the logs read; "" for none
	}{
		{"stdout of the only task", []string{"alloc", "logs", "a11c0001"}, 0, "Sun Mar  1 12:02:00 UTC 2026\n", "", "task=writer&type=stdout"},
		{"stderr of a named task", []string{"alloc", "logs", "-stderr", "a11c0001", "writer"}, 0, "sh: /data/out.txt: warning\n", "", "task=writer&type=stderr"},
		{"-stderr after the arguments", []string{"alloc", "logs", "a11c0001", "writer", "-stderr"}, 0, "sh: /data/out.txt: warning\n", "", "task=writer&type=stderr"},
		{"no such task", []string{"alloc", "logs", "a11c0001", "nope"}, 1, "",
			`Error: allocation "` + alloc1 + `" has no task "nope"; its tasks are "writer"` + "\n", ""},
		{"several tasks, none named", []string{"alloc", "logs", "5a4d"}, 1, "",
			`Error: allocation "` + allocShard + `" has 2 tasks: "db", "backup"; name the one whose log to print: berth alloc logs 5a4d0001 <task>` + "\n", ""},
		{"no allocation", []string{"alloc", "logs"}, 2, "", "Usage: berth alloc logs [options] <alloc> [<task>]", ""},
		{"not found", []string{"alloc", "logs", "ffff", "t"}, 1, "", `Error: allocation "ffff" not found`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, r.stdout)
			var queries []string
			for _, rd := range f.readsUnder("/v1/client/fs/logs/") {
				queries = append(queries, rd.query)
			}
			if tc.wantQuery == "" {
				must.SliceEmpty(t, queries)
			} else {
				must.Eq(t, []string{tc.wantQuery}, queries)
			}
		})
	}
}

// readsUnder returns the recorded reads of paths under prefix.
func (f *fixture) readsUnder(prefix string) []fixtureWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fixtureWrite
	for _, rd := range f.reads {
		if strings.HasPrefix(rd.path, prefix) {
			out = append(out, rd)
		}
	}
	return out
}

// TestRescheduleInfo: alloc status says which failed allocation this one
// replaces and how many attempts were made, and for a failed one when the
// leader replaces it, or that its policy is used up.
func TestRescheduleInfo(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	job := &structs.Job{ID: "web", Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{Name: "g"}}}
	a := &structs.Allocation{Job: job, TaskGroup: "g", ClientStatus: structs.AllocClientStatusFailed,
		DesiredStatus: structs.AllocDesiredStatusRun, FailTime: now.Add(-10 * time.Second).UnixNano(),
		PreviousAllocation: "prev-id", RescheduleEvents: []structs.RescheduleEvent{{Time: now.Add(-time.Minute).UnixNano()}}}
	must.Eq(t, [][2]string{
		{"Replaces", "prev-id"},
		{"Reschedule Attempts", "1 (policy: unlimited)"},
		{"Next Reschedule", "attempt 2 at " + formatTime(now.Add(50*time.Second)) + " (in 50s)"},
	}, rescheduleInfo(a, now), must.Sprint("exponential: 60 s after the second failure"))

	job.TaskGroups[0].Reschedule = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour}
	must.Eq(t, [2]string{"Next Reschedule", "none: its reschedule policy (1 in 1h0m0s) is used up; run the job again to replace it"},
		rescheduleInfo(a, now)[2])
}
