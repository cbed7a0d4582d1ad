package command

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// jobSpec is a one-group job of the given ID and type.
func jobSpec(id, typ string) string {
	return `job "` + id + `" {
  type = "` + typ + `"
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
}
`
}

var examplesDir = filepath.Join("..", "..", "..", "..", "examples")

func TestJobRun_Run(t *testing.T) {
	f := newFixture(t)
	spec := func(id, typ string) string { return writeSpec(t, id+".hcl", jobSpec(id, typ)) }
	bad := writeSpec(t, "typo.hcl", strings.Replace(jobSpec("web", "service"), "command", "comand", 1))
	two := writeSpec(t, "two.hcl", strings.Replace(strings.Replace(jobSpec("web", "service"), "command", "comand", 1), `"service"`, `"servce"`, 1))

	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string // "" for none
		wantFollow bool   // the job's allocations were read
	}{
		{"the example runs", []string{"job", "run", filepath.Join(examplesDir, "hostpath-job.hcl")}, "", 0,
			`==> Registered job "writer" (service)
    Allocation "a11c0001" placed on node "8a1c2f3e" (group "writer")
==> Following the allocations of job "writer"...
    Allocation "a11c0001": pending -> running
==> Job "writer": 1 allocation running
`, "", true},
		{"service becomes running", []string{"job", "run", spec("web", "service")}, "", 0,
			`==> Registered job "web" (service)
    Allocation "b0000001" placed on node "8a1c2f3e" (group "web")
==> Following the allocations of job "web"...
    Allocation "b0000001": pending -> running
==> Job "web": 1 allocation running
`, "", true},
		{"from stdin", []string{"job", "run", "-"}, jobSpec("web", "service"), 0,
			"==> Job \"web\": 1 allocation running\n", "", true},
		{"batch runs to completion", []string{"job", "run", spec("report", "batch")}, "", 0,
			`==> Registered job "report" (batch)
    Allocation "b0000002" placed on node "8a1c2f3e" (group "report")
    Allocation "b0000003" placed on node "f00dcafe" (group "report")
==> Following the allocations of job "report"...
    Allocation "b0000002": pending -> running
    Allocation "b0000003": pending -> complete
    Allocation "b0000002": running -> complete
==> Job "report": 2 allocations complete
`, "", true},
		{"system job: the allocations it finds", []string{"job", "run", spec("sys", "system")}, "", 0,
			`==> Registered job "sys" (system)
==> Following the allocations of job "sys"...
    Allocation "b0000004" (group "agent", node "8a1c2f3e"): running
    Allocation "b0000005" (group "agent", node "f00dcafe"): running
==> Job "sys": 2 allocations running
`, "", true},
		{"allocation fails", []string{"job", "run", spec("crash", "service")}, "", 1,
			`==> Registered job "crash" (service)
    Allocation "c4a50001" placed on node "8a1c2f3e" (group "crash")
==> Following the allocations of job "crash"...
    Allocation "c4a50001": pending -> failed
    Allocation "c4a50001": Failed tasks
    Task "server": Restarting: restart 2 of 2 in 15s
    Task "server": Terminated: exit code 1
    Task "server": Not Restarting: exceeded 2 restarts in 30m0s; restart mode is "fail"
`, `Error: job "crash": allocation "c4a50001" failed; see "berth alloc status c4a50001" and "berth alloc logs c4a50001"` + "\n", true},
		{"a task restarts before it runs", []string{"job", "run", spec("flaky", "service")}, "", 0,
			`==> Registered job "flaky" (service)
    Allocation "f1a50001" placed on node "8a1c2f3e" (group "flaky")
==> Following the allocations of job "flaky"...
    Allocation "f1a50001", task "server": Terminated: exit code 1
    Allocation "f1a50001", task "server": Restarting: restart 1 of 2 in 15s
    Allocation "f1a50001": pending -> running
==> Job "flaky": 1 allocation running
`, "", true},
		{"placement failures", []string{"job", "run", spec("nospace", "service")}, "", 1,
			`==> Registered job "nospace" (service)
    Group "db": 2 allocations not placed:
      volume "data" (single-node-writer) is claimed for writing by alloc a11c0001 on node 8a1c2f3e
      node 8a1c9d00 is down
`, `Error: job "nospace": 2 allocations could not be placed yet (see the reasons above); the job stays registered and the servers place it when it fits (follow it with "berth job status nospace", or stop it with "berth job stop nospace")` + "\n", false},
		{"partly placed", []string{"job", "run", spec("partial", "service")}, "", 1,
			`==> Registered job "partial" (service)
    Allocation "b0000001" placed on node "8a1c2f3e" (group "db")
    Group "db": 1 allocation not placed:
      no node has a healthy node plugin "hostpath"
`, `Error: job "partial": 1 allocation could not be placed`, false},
		{"placement failures with -detach", []string{"job", "run", "-detach", spec("nospace", "service")}, "", 1,
			"      node 8a1c9d00 is down\n", `2 allocations could not be placed`, false},
		{"-detach", []string{"job", "run", spec("web", "service"), "-detach"}, "", 0,
			`==> Registered job "web" (service)
    Allocation "b0000001" placed on node "8a1c2f3e" (group "web")
Follow the job with "berth job status web"
`, "", false},
		{"server refuses", []string{"job", "run", spec("bad", "service")}, "", 1, "",
			`Error: job "bad": group "g": volume "data": volume "nope" is not registered; register or create it first` + "\n", false},
		{"spec error", []string{"job", "run", bad}, "", 1, "",
			"Error: " + bad + `:6: group "g": task "t": config: unknown field "comand"; did you mean "command"?`, false},
		{"spec errors", []string{"job", "run", two}, "", 1, "",
			"Error: the job spec has 2 problems:\n" + two + `:2: job "web": type "servce" is not valid`, false},
		{"missing file", []string{"job", "run", filepath.Join(t.TempDir(), "nope.hcl")}, "", 1, "",
			"nope.hcl: no such file or directory; check the file's path", false},
		{"no file", []string{"job", "run"}, "", 2, "", "Error: this command takes one argument\n\nUsage: berth job run [options] <file>", false},
		{"help", []string{"job", "run", "-h"}, "", 0, "Usage: berth job run [options] <file>", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, tc.stdin, tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			if strings.HasPrefix(tc.wantStdout, "==> Registered") {
				must.EqOp(t, tc.wantStdout, r.stdout)
			} else {
				must.StrContains(t, r.stdout, tc.wantStdout)
			}
			must.EqOp(t, tc.wantFollow, f.followed())
		})
	}
}

func TestJobRun_SendsTheParsedJob(t *testing.T) {
	f := newFixture(t)
	src := `job "web" {
  group "g" {
    count = 1
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      mount_options { mount_flags = ["uid=1000"] }
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 1"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`
	r := runCLI(t, f.srv.URL, "", "job", "run", "-detach", writeSpec(t, "web.hcl", src))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	w, ok := f.lastWrite()
	must.True(t, ok)
	must.EqOp(t, "PUT", w.method)
	must.EqOp(t, "/v1/jobs", w.path)
	var req structs.JobRegisterRequest
	must.NoError(t, json.Unmarshal([]byte(w.body), &req))
	must.EqOp(t, "web", req.Job.ID)
	must.EqOp(t, "service", req.Job.Type)
	tg := req.Job.TaskGroups[0]
	// Mount flags reach the server as written.
	must.Eq(t, []string{"uid=1000"}, tg.Volumes["data"].MountOptions.MountFlags)
	must.Eq(t, map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 1"}}, tg.Tasks[0].Config)
	must.EqOp(t, "private", tg.Tasks[0].VolumeMounts[0].PropagationMode)
	must.NotNil(t, tg.Tasks[0].Restart)
}

func TestJobStatus_Output(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string   // exact, when set
		contains   []string // in stdout
		wantStderr string
	}{
		{
			name: "list",
			args: []string{"job", "status"},
			wantStdout: `ID        Type     Status
nightly   batch    dead
plugin    system   running
reporter  service  dead (stopped)
shards    service  pending
writer    service  running
`,
		},
		{
			name: "one job by prefix",
			args: []string{"job", "status", "wr"},
			wantStdout: `ID        = writer
Name      = writer
Namespace = <none>
Type      = service
Status    = running

Task Groups
Name    Count  Tasks
writer  1      writer

Volumes
Group   Volume  Source  Access Mode         Attachment Mode  Read Only  Per Alloc
writer  data    data    single-node-writer  file-system      false      false

Summary
Task Group  Pending  Running  Complete  Failed  Lost
writer      0        1        0         0       0

Allocations
ID        Node ID   Task Group  Desired  Status
a11c0001  8a1c2f3e  writer      run      running
`,
		},
		{
			name: "system job and verbose IDs",
			args: []string{"job", "status", "-verbose", "plugin"},
			contains: []string{"Type      = system\n", "hostpath  one per node  plugin\n",
				alloc2 + "  " + node1 + "  hostpath    run      running\n"},
		},
		{
			name:     "stopped job",
			args:     []string{"job", "status", "reporter"},
			contains: []string{"Status    = dead (stopped)\n", "report      0        0        0         0       1\n"},
		},
		{
			name:     "per_alloc volumes",
			args:     []string{"job", "status", "shards"},
			contains: []string{"db    2      db, backup\n", "db     data    data    single-node-writer       file-system      false      true\n"},
		},
		{name: "not found", args: []string{"job", "status", "nope"}, wantCode: 1,
			wantStderr: `Error: job "nope" not found; run "berth job status" to list them`},
		{name: "too many", args: []string{"job", "status", "a", "b"}, wantCode: 2,
			wantStderr: "this command takes at most one argument, got 2: a b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			mustStdout(t, r, tc.wantStdout, tc.contains)
		})
	}
}

func TestJobStatus_JSON_IsTheAPIs(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		path string
	}{
		{[]string{"job", "status", "-json"}, "/v1/jobs"},
		{[]string{"job", "status", "-json", "wri"}, "/v1/job/writer"},
	} {
		r := runCLI(t, f.srv.URL, "", tc.args...)
		must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
		var got, want any
		must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		must.NoError(t, json.Unmarshal(fetch(t, f.srv.URL+tc.path), &want))
		must.Eq(t, want, got)
	}
}

func TestJobStop_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
		wantWrite  string // path?query of the DELETE; "" for none
	}{
		{"by prefix", []string{"job", "stop", "wri"}, 0,
			"Job \"writer\" stopped; its allocations stop and release their volumes (see \"berth job status writer\")\n", "",
			"/v1/job/writer"},
		{"purge", []string{"job", "stop", "-purge", "reporter"}, 0,
			"Job \"reporter\" stopped and purged; its allocations stop and release their volumes\n", "", "/v1/job/reporter?purge=true"},
		{"purge after the ID", []string{"job", "stop", "nightly", "-purge"}, 0, "Job \"nightly\" stopped and purged", "",
			"/v1/job/nightly?purge=true"},
		{"not found", []string{"job", "stop", "nope"}, 1, "", `Error: job "nope" not found; run "berth job status" to list them`, ""},
		{"no ID", []string{"job", "stop"}, 2, "", "Usage: berth job stop [options] <job>", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.StrContains(t, r.stdout, tc.wantStdout)
			path, query, _ := strings.Cut(tc.wantWrite, "?")
			f.mustLastWrite(t, tc.wantWrite != "", fixtureWrite{method: "DELETE", path: path, query: query})
		})
	}
}

// followed reports whether any job's allocations were read.
func (f *fixture) followed() bool {
	for _, rd := range f.readsUnder("/v1/job/") {
		if strings.HasSuffix(rd.path, "/allocations") {
			return true
		}
	}
	return false
}

func TestApp_JobAllocAndDetachHelp(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stdout, or in stderr for usage errors
	}{
		{"job alone lists its verbs", []string{"job"}, 2, "    run      Run a job from a job spec\n    status   Display status information about jobs\n    stop     Stop a running job\n" +
			"    plan     Show what running a job would change\n    history  List a job's versions\n    revert   Run an earlier version of a job again\n"},
		{"alloc alone lists its verbs", []string{"alloc"}, 2, "    status  Display the status of an allocation\n    logs    Print the logs of an allocation's task\n"},
		{"volume lists detach", []string{"volume"}, 2, "    detach           Release a node's claims on a CSI volume\n"},
		{"main help", []string{"-h"}, 0, "job run                       Run a job from a job spec\n"},
		{"run help", []string{"help", "job", "run"}, 0, "-detach\n"},
		{"stop help", []string{"job", "stop", "-h"}, 0, "-purge\n"},
		{"logs help", []string{"alloc", "logs", "-h"}, 0, "-stderr\n"},
		{"detach help", []string{"help", "volume", "detach"}, 0, "Usage: berth volume detach [options] <volume> <node>\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", "", tc.args...)
			must.EqOp(t, tc.wantCode, r.code)
			if tc.wantCode == 0 {
				must.StrContains(t, r.stdout, tc.want)
			} else {
				must.StrContains(t, r.stderr, tc.want)
			}
		})
	}
}

// TestJobRun_WaitsForItsPlugin: job run of a plugin job ends once the
// plugin is registered healthy, so that plugin status right after it
// finds the plugin.
func TestJobRun_WaitsForItsPlugin(t *testing.T) {
	defer func(d time.Duration) { pluginWaitPoll = d }(pluginWaitPoll)
	pluginWaitPoll = 10 * time.Millisecond
	f := newFixture(t)
	spec := writeSpec(t, "late.hcl", `job "late" {
  type = "system"
  group "g" {
    task "plugin" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
      csi_plugin {
        id        = "late"
        type      = "monolith"
        mount_dir = "/csi"
      }
    }
  }
}
`)
	r := runCLI(t, f.srv.URL, "", "job", "run", spec)
	mustExit(t, r, 0, "")
	must.EqOp(t, `==> Registered job "late" (system)
==> Following the allocations of job "late"...
    Allocation "1a7e0001" (group "g", node "8a1c2f3e"): running
==> Job "late": 1 allocation running
==> Waiting for plugin "late" to be registered healthy (1 node instance, 1 controller instance)...
==> Plugin "late" registered: controllers 1/1 healthy, nodes 1/1 healthy
`, r.stdout)
}
