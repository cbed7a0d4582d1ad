package spec

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// dbJobHCL is INTERFACE.md's job, with a plugin task.
const dbJobHCL = `job "db" {
  type = "service"                         # service | batch | system
  group "db" {
    count = 1
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      read_only       = false
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    task "server" {
      driver = "exec"
      config {
        command = "/usr/bin/env"
        args    = ["sh", "-c", "..."]
      }
      env {
        KEY = "value"
        N   = 3
      }
      kill_timeout = "10s"
      user         = "postgres"
      restart { attempts = 5 }
      volume_mount {
        volume           = "data"
        destination      = "/srv/data"
        propagation_mode = "bidirectional"
      }
    }
  }
  group "plugin" {
    disconnect { stop_on_client = false }
    task "plugin" {
      driver = "exec"
      config {
        command = "berth-hostpath"
        args    = ["-root", "/var/lib/berth-hostpath"]
      }
      csi_plugin {
        id             = "hostpath"
        type           = "monolith"            # controller | node | monolith
        mount_dir      = "/csi"
        health_timeout = "45s"
      }
    }
  }
}
`

func wantDBJob() *structs.Job {
	return &structs.Job{
		ID: "db", Name: "db", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{
			{
				Name: "db", Count: 1,
				Volumes: map[string]*structs.VolumeRequest{"data": {
					Name: "data", Type: "csi", Source: "data",
					AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
					AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
					MountOptions:   &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}},
				}},
				Tasks: []*structs.Task{{
					Name: "server", Driver: "exec",
					Config:      map[string]any{"command": "/usr/bin/env", "args": []string{"sh", "-c", "..."}},
					Env:         map[string]string{"KEY": "value", "N": "3"},
					KillTimeout: 10 * time.Second,
					User:        "postgres",
					Restart:     &structs.RestartPolicy{Attempts: 5, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"},
					VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/srv/data",
						PropagationMode: structs.PropagationBidirectional}},
				}},
			},
			{
				Name: "plugin", Count: 1,
				Disconnect: &structs.DisconnectStrategy{StopOnClient: new(false)},
				Tasks: []*structs.Task{{
					Name: "plugin", Driver: "exec",
					Config:          map[string]any{"command": "berth-hostpath", "args": []string{"-root", "/var/lib/berth-hostpath"}},
					KillTimeout:     5 * time.Second,
					Restart:         &structs.RestartPolicy{Attempts: 10, Interval: 10 * time.Minute, Delay: time.Second, Mode: "delay"},
					CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, MountDir: "/csi", HealthTimeout: int64(45 * time.Second)},
				}},
			},
		},
	}
}

func TestParseJob_FullSpec_HCL(t *testing.T) {
	job, err := ParseJob("db.hcl", []byte(dbJobHCL))
	must.NoError(t, err)
	must.Eq(t, wantDBJob(), job)
}

func TestParseJob_APIJSON_RoundTrips(t *testing.T) {
	want := wantDBJob()
	// The API's JSON redacts mount flags; a job read back has none to give.
	want.TaskGroups[0].Volumes["data"].MountOptions.MountFlags = nil
	want.Namespace = "prod"
	want.CreateIndex, want.ModifyIndex = 0, 0
	read := want.Copy()
	read.Stop, read.CreateIndex, read.ModifyIndex = true, 17, 18 // the server's own; ignored
	b, err := json.MarshalIndent(read, "", "  ")
	must.NoError(t, err)

	t.Run("bare", func(t *testing.T) {
		job, err := ParseJob("db.json", b)
		must.NoError(t, err)
		must.Eq(t, want, job)
	})
	t.Run("wrapped", func(t *testing.T) {
		job, err := ParseJob("db", []byte(`{"Job": `+string(b)+`}`))
		must.NoError(t, err)
		must.Eq(t, want, job)
	})
	t.Run("durations as numbers", func(t *testing.T) {
		src := `{"ID": "b", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec",
  "Config": {"command": "/bin/true"}, "KillTimeout": 2000000000, "Restart": {"Attempts": 1, "Interval": "1m"}}]}]}`
		job, err := ParseJob("b.json", []byte(src))
		must.NoError(t, err)
		task := job.TaskGroups[0].Tasks[0]
		must.EqOp(t, 2*time.Second, task.KillTimeout)
		must.Eq(t, &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: 15 * time.Second, Mode: "fail"}, task.Restart)
	})
}

func TestParseJob_Defaults(t *testing.T) {
	const minimal = `job "j" {
  %s
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      %s
    }
  }
}`
	const plugin = "csi_plugin {\n        id   = \"p\"\n        type = \"node\"\n      }\n"
	cases := []struct {
		name        string
		jobType     string
		body        string
		wantType    string
		wantRestart *structs.RestartPolicy
	}{
		{"service by default", "", "", "service",
			&structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}},
		{"batch", `type = "batch"`, "", "batch",
			&structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}},
		{"system", `type = "system"`, "", "system",
			&structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}},
		{"partial restart merges with the type's", `type = "batch"`, "restart {\n        mode  = \"delay\"\n        delay = \"1m\"\n      }", "batch",
			&structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: time.Minute, Mode: "delay"}},
		{"plugin task", `type = "system"`, plugin, "system",
			&structs.RestartPolicy{Attempts: 10, Interval: 10 * time.Minute, Delay: time.Second, Mode: "delay"}},
		{"plugin task, partial restart merges with the plugin's", `type = "system"`, "restart { attempts = 3 }\n" + plugin, "system",
			&structs.RestartPolicy{Attempts: 3, Interval: 10 * time.Minute, Delay: time.Second, Mode: "delay"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(minimal, "%s", tc.jobType, 1), "%s", tc.body, 1)
			job, err := ParseJob("j.hcl", []byte(src))
			must.NoError(t, err)
			must.EqOp(t, tc.wantType, job.Type)
			must.EqOp(t, "j", job.Name)
			tg := job.TaskGroups[0]
			must.EqOp(t, 1, tg.Count)
			task := tg.Tasks[0]
			must.Eq(t, tc.wantRestart, task.Restart)
			must.EqOp(t, 5*time.Second, task.KillTimeout)
			if tc.body == plugin {
				must.Eq(t, &structs.TaskCSIPluginConfig{ID: "p", Type: "node", MountDir: "/csi", HealthTimeout: int64(30 * time.Second)},
					task.CSIPluginConfig)
			}
		})
	}
}

func TestParseJob_VolumeMountDefaultsAndCount(t *testing.T) {
	src := `job "shards" {
  group "db" {
    count = 3
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      per_alloc       = true
    }
    volume "shared" {
      type            = "csi"
      source          = "shared"
      access_mode     = "multi-node-reader-only"
      attachment_mode = "file-system"
      read_only       = true
    }
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      volume_mount {
        volume           = "shared"
        destination      = "/shared"
        read_only        = true
        propagation_mode = "host-to-task"
      }
    }
  }
  group "empty" {
    count = 0
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
}`
	job, err := ParseJob("shards.hcl", []byte(src))
	must.NoError(t, err)
	tg := job.TaskGroups[0]
	must.EqOp(t, 3, tg.Count)
	must.True(t, tg.Volumes["data"].PerAlloc)
	must.Eq(t, []*structs.VolumeMount{
		{Volume: "data", Destination: "/data", PropagationMode: "private"},
		{Volume: "shared", Destination: "/shared", ReadOnly: true, PropagationMode: "host-to-task"},
	}, tg.Tasks[0].VolumeMounts)
	must.EqOp(t, 0, job.TaskGroups[1].Count)
}

// TestParseJob_EnvInterpolationKept: ${NAME} in a string stays as written,
// for the client to fill from the task's environment; $${NAME} is the
// escape; anything but a plain name is still refused.
func TestParseJob_EnvInterpolationKept(t *testing.T) {
	src := `job "p" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/${TOOL}"
        args    = ["-root", "/srv/${BERTH_NODE_NAME}/x", "$${KEPT}", "${A}${B}"]
      }
    }
  }
}`
	job, err := ParseJob("p.hcl", []byte(src))
	must.NoError(t, err)
	cfg := job.TaskGroups[0].Tasks[0].Config
	must.Eq[any](t, "/bin/${TOOL}", cfg["command"])
	must.Eq[any](t, []string{"-root", "/srv/${BERTH_NODE_NAME}/x", "${KEPT}", "${A}${B}"}, cfg["args"])

	_, err = ParseJob("p.hcl", []byte(strings.Replace(src, "${TOOL}", "${var.tool}", 1)))
	must.ErrorContains(t, err, "p.hcl:6: job.group.task.config.command: must be a literal value")
	_, err = ParseJob("p.hcl", []byte(strings.Replace(src, `driver = "exec"`, `driver = "${D}"`, 1)))
	must.ErrorContains(t, err, "p.hcl:4: job.group.task.driver: must be a literal value", must.Sprint("only command and args keep ${NAME}"))
}

// jobWith is a valid job with group and task bodies replaced.
func jobWith(groupExtra, volume, taskExtra string) string {
	if volume == "" {
		volume = `volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }`
	}
	return `job "web" {
  group "db" {
    ` + groupExtra + `
    ` + volume + `
    task "server" {
      driver = "exec"
      config { command = "/bin/sh" }
      ` + taskExtra + `
    }
  }
}
`
}

func TestParseJob_Errors(t *testing.T) {
	mount := func(extra string) string {
		return "volume_mount {\n        volume      = \"data\"\n        destination = \"/data\"\n        " + extra + "\n      }"
	}
	cases := []struct {
		name      string
		file, src string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"bad access mode", "web.hcl", strings.Replace(jobWith("", "", ""), `"single-node-writer"`, `"single-writer"`, 1), 7,
			"group[db].volume[data].access_mode",
			`web.hcl:7: group "db": volume "data": access_mode "single-writer" is not valid; one of "single-node-reader-only", "single-node-writer", `},
		{"misspelt field", "web.hcl", strings.Replace(jobWith("", "", ""), "command", "comand", 1), 12,
			"group[db].task[server].config.comand",
			`web.hcl:12: group "db": task "server": config: unknown field "comand"; did you mean "command"?`},
		{"misspelt group field", "web.hcl", jobWith("cuont = 2", "", ""), 3,
			"group[db].cuont", `web.hcl:3: group "db": unknown field "cuont"; did you mean "count"?`},
		{"unknown field, no guess", "web.hcl", jobWith("", "", "datacenters = [\"dc1\"]"), 13,
			"group[db].task[server].datacenters",
			`group "db": task "server": unknown field "datacenters"; valid fields are driver, config, env, restart, kill_timeout, kill_signal, volume_mount, csi_plugin, user`},
		{"user with a space", "web.hcl", jobWith("", "", `user = "no body"`), 13,
			"group[db].task[server].user", `web.hcl:13: group "db": task "server": user "no body" is not a user name (letters, digits, '_', '.' and '-', starting with a letter or '_') or a numeric uid`},
		{"user empty", "web.hcl", jobWith("", "", `user = ""`), 13,
			"group[db].task[server].user", `group "db": task "server": user is empty; name a user, e.g. "nobody", or a numeric uid`},
		{"user as a number", "web.hcl", jobWith("", "", `user = 1000`), 13,
			"group[db].task[server].user", `group "db": task "server": user must be a string, not a number`},
		{"misspelt user", "web.hcl", jobWith("", "", `usr = "nobody"`), 13,
			"group[db].task[server].usr", `unknown field "usr"; did you mean "user"?`},
		{"bad user in JSON", "web.json", `{"ID": "web", "TaskGroups": [{"Name": "db", "Tasks": [{"Name": "t", "Driver": "exec",
  "Config": {"command": "/bin/true"}, "User": "a:b"}]}]}`, 2,
			"group[db].task[t].user", `group "db": task "t": user "a:b" is not a user name`},
		{"disconnect field as string", "web.hcl", jobWith(`disconnect { stop_on_client = "no" }`, "", ""), 3,
			"group[db].disconnect.stop_on_client", `web.hcl:3: group "db": disconnect: stop_on_client must be true or false, not a string`},
		{"misspelt disconnect field", "web.hcl", jobWith(`disconnect { stop_on_clent = false }`, "", ""), 3,
			"group[db].disconnect.stop_on_clent", `web.hcl:3: group "db": disconnect: unknown field "stop_on_clent"; did you mean "stop_on_client"?`},
		{"negative count", "web.hcl", jobWith("count = -1", "", ""), 3,
			"group[db].count", `web.hcl:3: group "db": count must be 0 or more, not -1`},
		{"count too large", "web.hcl", jobWith("count = 99999999999", "", ""), 3,
			"group[db].count", `web.hcl:3: group "db": count 99999999999 is too large; the most is 2147483647`},
		{"attempts too small", "web.hcl", jobWith("", "", `restart { attempts = -99999999999 }`), 13,
			"group[db].task[server].restart.attempts", `restart: attempts -99999999999 is too small; the least is -2147483648`},
		{"count not whole", "web.hcl", jobWith("count = 1.5", "", ""), 3,
			"group[db].count", `web.hcl:3: group "db": count must be a whole number, not 1.5`},
		{"count as string", "web.hcl", jobWith(`count = "2"`, "", ""), 3,
			"group[db].count", `count must be a whole number, not a string; leave out the quotes`},
		{"mount of a misspelt volume", "web.hcl", jobWith("", "", strings.Replace(mount(""), `"data"`, `"dta"`, 1)), 14,
			"group[db].task[server].volume_mount.volume",
			`web.hcl:14: group "db": task "server": volume_mount: volume "dta" is not a volume of group "db"; did you mean "data"?`},
		{"mount of an unknown volume", "web.hcl", jobWith("", "", strings.Replace(mount(""), `"data"`, `"logs"`, 1)), 14,
			"group[db].task[server].volume_mount.volume",
			`volume_mount: volume "logs" is not a volume of group "db"; its volumes are "data"`},
		{"mount without group volumes", "web.hcl", jobWith("", "#", mount("")), 9,
			"group[db].task[server].volume_mount.volume",
			`volume "data" is not a volume of group "db", which has no volume blocks; add a volume "data" { ... } block to the group`},
		{"bidirectional on a read-only mount", "web.hcl", jobWith("", "", mount("read_only = true\n        propagation_mode = \"bidirectional\"")), 17,
			"group[db].task[server].volume_mount.propagation_mode",
			`web.hcl:17: group "db": task "server": volume_mount: propagation_mode "bidirectional" needs a read-write mount, but this volume_mount is read_only (line 16)`},
		{"bidirectional on a read-only volume", "web.hcl",
			jobWith("", "volume \"data\" {\n      type = \"csi\"\n      source = \"data\"\n      access_mode = \"multi-node-multi-writer\"\n      attachment_mode = \"file-system\"\n      read_only = true\n    }",
				mount(`propagation_mode = "bidirectional"`)), 17,
			"group[db].task[server].volume_mount.propagation_mode",
			`propagation_mode "bidirectional" needs a read-write volume, but volume "data" is read_only (line 9)`},
		{"bad propagation mode", "web.hcl", jobWith("", "", mount(`propagation_mode = "shared"`)), 16,
			"group[db].task[server].volume_mount.propagation_mode",
			`propagation_mode "shared" is not valid; one of "private", "host-to-task", "bidirectional"`},
		{"docker with exec's config", "web.hcl", strings.Replace(jobWith("", "", ""), `driver = "exec"`, `driver = "docker"`, 1), 12,
			"group[db].task[server].config.image", `web.hcl:12: group "db": task "server": config: missing image; name the image to run`},
		{"unsupported driver", "web.hcl", strings.Replace(jobWith("", "", ""), `driver = "exec"`, `driver = "podman"`, 1), 11,
			"group[db].task[server].driver", `web.hcl:11: group "db": task "server": driver "podman" is not supported; berth runs tasks with driver = "exec" or "docker"`},
		{"no command", "web.hcl", strings.Replace(jobWith("", "", ""), `command = "/bin/sh"`, `args = ["x"]`, 1), 12,
			"group[db].task[server].config.command", `group "db": task "server": config: missing command; name the program to run`},
		{"no config", "web.hcl", strings.Replace(jobWith("", "", ""), `config { command = "/bin/sh" }`, ``, 1), 10,
			"group[db].task[server].config", `group "db": task "server": missing config`},
		{"plugin type", "web.hcl", jobWith("", "", `csi_plugin {
        id   = "hp"
        type = "nodes"
      }`), 15, "group[db].task[server].csi_plugin.type",
			`csi_plugin: type "nodes" is not valid; one of "controller", "node", "monolith"; did you mean "node"?`},
		{"plugin mount_dir relative", "web.hcl", jobWith("", "", `csi_plugin {
        id        = "hp"
        type      = "node"
        mount_dir = "csi"
      }`), 16, "group[db].task[server].csi_plugin.mount_dir", `mount_dir "csi" must be an absolute path in the task`},
		{"plugin without id", "web.hcl", jobWith("", "", `csi_plugin { type = "node" }`), 13,
			"group[db].task[server].csi_plugin.id", `csi_plugin: missing id`},
		{"duration without unit", "web.hcl", jobWith("", "", "kill_timeout = 10"), 13,
			"group[db].task[server].kill_timeout", `kill_timeout must be a duration string such as "10s", not a number; durations need a unit`},
		{"duration malformed", "web.hcl", jobWith("", "", `kill_timeout = "10 secs"`), 13,
			"group[db].task[server].kill_timeout", `kill_timeout "10 secs" is not a duration`},
		{"restart interval too short", "web.hcl", jobWith("", "", `restart { interval = "1s" }`), 13,
			"group[db].task[server].restart.interval", `restart: interval 1s is too short; it must be at least 5s`},
		{"restart delay too short", "web.hcl", jobWith("", "", `restart {
        attempts = 3
        delay    = "0s"
      }`), 15, "group[db].task[server].restart.delay",
			`restart: delay 0s is too short; it must be at least 1s, so that a failing task restarts at most once a second`},
		{"restart does not fit", "web.hcl", jobWith("", "", `restart {
        attempts = 10
        delay    = "5m"
      }`), 13, "group[db].task[server].restart",
			`restart: 10 attempts with a delay of 5m0s do not fit in an interval of 30m0s`},
		{"restart mode", "web.hcl", jobWith("", "", `restart { mode = "retry" }`), 13,
			"group[db].task[server].restart.mode", `mode "retry" is not valid; one of "fail", "delay"`},
		{"writer volume for three", "web.hcl", jobWith("count = 3", "", ""), 7,
			"group[db].volume[data].access_mode",
			`web.hcl:7: group "db": volume "data": access_mode "single-node-writer" lets one allocation use the volume, but count is 3 (line 3); set per_alloc = true`},
		{"reader-only needs read_only", "web.hcl", strings.Replace(jobWith("", "", ""), `"single-node-writer"`, `"multi-node-reader-only"`, 1), 7,
			"group[db].volume[data].access_mode", `access_mode "multi-node-reader-only" needs read_only = true`},
		{"single writer for three", "web.hcl", strings.Replace(jobWith("count = 3", "", ""), `"single-node-writer"`, `"multi-node-single-writer"`, 1), 7,
			"group[db].volume[data].access_mode", `lets one allocation write the volume, but count is 3 (line 3)`},
		{"per_alloc in a system job", "web.hcl",
			strings.Replace(strings.Replace(jobWith("", "", ""), `group "db" {`, "type = \"system\"\n  group \"db\" {", 1),
				`attachment_mode = "file-system"`, "attachment_mode = \"file-system\"\n      per_alloc = true", 1), 10,
			"group[db].volume[data].per_alloc", `group "db": volume "data": per_alloc cannot be used in a system job`},
		{"mount options on a block device", "web.hcl",
			strings.Replace(jobWith("", "", ""), `attachment_mode = "file-system"`, "attachment_mode = \"block-device\"\n      mount_options { fs_type = \"ext4\" }", 1), 9,
			"group[db].volume[data].mount_options", `mount_options cannot be used with attachment_mode "block-device"`},
		{"group policy unknown", "web.hcl",
			strings.Replace(jobWith("", "", ""), `attachment_mode = "file-system"`, "attachment_mode = \"file-system\"\n      mount_options { group_policy = \"fsgroup\" }", 1), 9,
			"group[db].volume[data].mount_options.group_policy",
			`group "db": volume "data": mount_options: group_policy is "fsgroup"; use "on-root-mismatch" (the default), "always" or "none"`},
		{"volume type host", "web.hcl", strings.Replace(jobWith("", "", ""), `type            = "csi"`, `type = "host"`, 1), 5,
			"group[db].volume[data].type", `group "db": volume "data": type "host" is not supported; berth volumes are type = "csi"`},
		{"volume without source", "web.hcl", strings.Replace(jobWith("", "", ""), `source          = "data"`, ``, 1), 4,
			"group[db].volume[data].source", `group "db": volume "data": missing source`},
		{"volume without a name", "web.hcl", strings.Replace(jobWith("", "", ""), `volume "data" {`, `volume {`, 1), 4,
			"group[db].volume", `group "db": volume needs a name; write volume "name" { ... }`},
		{"read_only quoted", "web.hcl", strings.Replace(jobWith("", "", ""), `attachment_mode = "file-system"`, "attachment_mode = \"file-system\"\n      read_only = \"true\"", 1), 9,
			"group[db].volume[data].read_only", `read_only must be true or false, not a string; leave out the quotes`},
		{"field twice", "web.hcl", jobWith("count = 1\n    count = 2", "", ""), 4,
			"", `web.hcl:4: attribute redefined: The argument "count" was already set at web.hcl:3`},
		{"field twice in JSON", "web.json", "{\"ID\": \"web\",\n \"Type\": \"batch\",\n \"Type\": \"system\"}", 3,
			"job.type", `job "web": type is set twice (first at line 2)`},
		{"duration past int64 in JSON", "web.json", `{"ID": "web", "TaskGroups": [{"Name": "db", "Tasks": [{"Name": "t", "Driver": "exec",
  "Config": {"command": "/bin/true"}, "KillTimeout": 9223372036854775808}]}]}`, 2,
			"group[db].task[t].kill_timeout", `must be a non-negative whole number of nanoseconds, not 9223372036854775808`},
		{"bad job type", "web.hcl", strings.Replace(jobWith("", "", ""), `group "db" {`, "type = \"servce\"\n  group \"db\" {", 1), 2,
			"job.type", `web.hcl:2: job "web": type "servce" is not valid; one of "service", "batch", "system"; did you mean "service"?`},
		{"group twice", "web.hcl", strings.Replace(jobWith("", "", ""), "\n}\n", "\n  group \"db\" {}\n}\n", 1), 16,
			"group[db]", `group "db" is defined twice (first at line 2)`},
		{"no group", "web.hcl", "job \"web\" {\n  type = \"batch\"\n}\n", 1,
			"job", `job "web": has no group`},
		{"no task", "web.hcl", "job \"web\" {\n  group \"g\" {\n    count = 1\n  }\n}\n", 2,
			"group[g]", `group "g": has no task`},
		{"no job", "web.hcl", "group \"g\" {}\n", 1, "group", `"group" is outside the job block`},
		{"job misspelt", "web.hcl", "jobs \"web\" {}\n", 1, "jobs", `unknown field "jobs"; did you mean "job"?`},
		{"two jobs", "web.hcl", jobWith("", "", "") + "job \"b\" {}\n", 17, "job", `job: a spec holds one job, but a second one starts here (the first is at line 1)`},
		{"job without a name", "web.hcl", "job {\n}\n", 1, "job", `job needs a name; write job "name" { ... }`},
		{"job name with a space", "web.hcl", "job \"my web\" {\n}\n", 1, "job", `web.hcl:1: job: job ID "my web" must not contain ' '`},
		// Names are checked by the servers' rule (structs.ValidateName).
		{"job name with brackets", "web.hcl", strings.Replace(jobWith("", "", ""), `job "web"`, `job "a[1]"`, 1), 1, "job",
			`web.hcl:1: job: job ID "a[1]" must not contain '[' or ']'`},
		{"job namespace with a slash", "web.hcl", strings.Replace(jobWith("", "", ""), `group "db" {`, "namespace = \"a/b\"\n  group \"db\" {", 1), 2,
			"job.namespace", `web.hcl:2: job "web": namespace: namespace "a/b" must not contain '/'`},
		{"group name with a leading dot", "web.hcl", strings.Replace(jobWith("", "", ""), `group "db"`, `group ".g"`, 1), 2, "group",
			`web.hcl:2: group: group name ".g" must not start with '.'`},
		{"group name with brackets", "web.hcl", strings.Replace(jobWith("", "", ""), `group "db"`, `group "g[0]"`, 1), 2, "group",
			`group name "g[0]" must not contain '[' or ']'`},
		{"task name with a slash", "web.hcl", strings.Replace(jobWith("", "", ""), `task "server"`, `task "a/b"`, 1), 10, "group[db].task",
			`web.hcl:10: group "db": task: task name "a/b" must not contain '/'`},
		{"volume name with a tab", "web.hcl", strings.Replace(strings.Replace(jobWith("", "", ""), `volume "data"`, `volume "da\tta"`, 1), `volume = "data"`, `volume = "da\tta"`, 1),
			4, "group[db].volume", `web.hcl:4: group "db": volume: volume name "da\tta" must not contain '\t'`},
		{"volume source with a leading dot", "web.hcl", strings.Replace(jobWith("", "", ""), `source          = "data"`, `source = ".."`, 1), 6,
			"group[db].volume[data].source", `web.hcl:6: group "db": volume "data": source: volume ID ".." must not start with '.'`},
		{"plugin ID with a space", "web.hcl", jobWith("", "", `csi_plugin {
        id   = "host path"
        type = "node"
      }`), 14, "group[db].task[server].csi_plugin.id", `csi_plugin: id: plugin ID "host path" must not contain ' '`},
		{"plugin ID empty", "web.hcl", jobWith("", "", `csi_plugin {
        id   = ""
        type = "node"
      }`), 14, "group[db].task[server].csi_plugin.id", `csi_plugin: id: plugin ID is missing`},
		{"json job ID with brackets", "web.json", `{"ID": "a[1]", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "x"}}]}]}`, 1,
			"job", `job: job ID "a[1]" must not contain '[' or ']'`},
		{"empty", "web.hcl", " \n", 1, "job", "the job spec is empty"},
		{"hcl syntax", "web.hcl", "job \"web\" {\n  group \"g\" {\n", 2, "", "web.hcl:2: unclosed configuration block"},
		{"one-line block with two arguments", "web.hcl",
			strings.Replace(jobWith("", "", ""), `config { command = "/bin/sh" }`, `config { command = "/bin/sh"  args = ["-c", "true"] }`, 1), 12,
			"", "web.hcl:12: invalid single-argument block definition: A single-line block definition must end with a closing brace immediately after its single argument definition; put each argument on its own line"},
		{"variables", "web.hcl", strings.Replace(jobWith("", "", ""), `"/bin/sh"`, `var.shell`, 1), 12,
			"job.group.task.config.command", "variables and functions are not allowed here"},
		{"json not the API's form", "web.json", `{"job": {"web": {}}}`, 1, "", `the JSON must be the API's form of a job`},
		{"json error line", "web.json", "{\n  \"ID\": \"web\",\n  \"TaskGroups\": [{\n    \"Name\": \"g\",\n    \"Count\": \"many\",\n" +
			"    \"Tasks\": [{\"Name\": \"t\", \"Driver\": \"exec\", \"Config\": {\"command\": \"/bin/true\"}}]\n  }]\n}", 5,
			"group[g].count", `web.json:5: group "g": count must be a whole number, not a string`},
		{"json unknown field", "web.json", `{"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Drivr": "exec", "Config": {"command": "x"}}]}]}`, 1,
			"group[g].task[t].Drivr", `group "g": task "t": unknown field "Drivr"; did you mean "driver"?`},
		{"json without ID", "web.json", `{"Type": "batch"}`, 1, "ID", `ID: missing`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := ParseJob(tc.file, []byte(tc.src))
			must.Nil(t, job)
			must.Error(t, err)
			var se *Error
			must.True(t, errors.As(err, &se), must.Sprintf("not a spec error: %v", err))
			found := false
			var all []*Error
			var many interface{ Unwrap() []error }
			if errors.As(err, &many) {
				for _, e := range many.Unwrap() {
					all = append(all, e.(*Error))
				}
			} else {
				all = []*Error{se}
			}
			for _, e := range all {
				if e.Line == tc.wantLine && (tc.wantField == "" || e.Field == tc.wantField) && strings.Contains(e.Error(), tc.wantMsg) {
					found = true
				}
			}
			must.True(t, found, must.Sprintf("want an error at line %d, field %q, containing %q; got:\n%v", tc.wantLine, tc.wantField, tc.wantMsg, err))
		})
	}
}

func TestParseJob_SystemJobIgnoresCount(t *testing.T) {
	src := strings.Replace(jobWith("count = 3", "", ""), `group "db" {`, "type = \"system\"\n  group \"db\" {", 1)
	job, err := ParseJob("web.hcl", []byte(src))
	must.NoError(t, err)
	must.EqOp(t, structs.JobTypeSystem, job.Type)
}

func TestParseJob_ManyProblemsAtOnce(t *testing.T) {
	src := strings.Replace(strings.Replace(jobWith("count = -1", "", ""), `driver = "exec"`, `driver = "raw_exec"`, 1),
		`"single-node-writer"`, `"sometimes"`, 1)
	_, err := ParseJob("web.hcl", []byte(src))
	must.Error(t, err)
	var many interface{ Unwrap() []error }
	must.True(t, errors.As(err, &many))
	must.Len(t, 3, many.Unwrap())
	lines := strings.Split(err.Error(), "\n")
	must.StrHasPrefix(t, "web.hcl:3:", lines[0])
	must.StrHasPrefix(t, "web.hcl:7:", lines[1])
	must.StrHasPrefix(t, "web.hcl:11:", lines[2])
}

func TestParseJobFile_Missing(t *testing.T) {
	_, err := ParseJobFile(filepath.Join(t.TempDir(), "nope.hcl"))
	must.ErrorContains(t, err, "cannot read job spec")
	must.ErrorContains(t, err, "check the file's path")
}

// A misspelt required field is one problem, not also a missing field.
func TestParseJob_MisspeltRequiredFieldIsOneProblem(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"command", "command", "comand", `unknown field "comand"; did you mean "command"?`},
		{"driver", "driver", "drivr", `unknown field "drivr"; did you mean "driver"?`},
		{"source", "source  ", "sourc   ", `unknown field "sourc"; did you mean "source"?`},
		{"task", `task "server"`, `tsk "server"`, `unknown field "tsk"; did you mean "task"?`},
		{"group", `group "db"`, `grup "db"`, `unknown field "grup"; did you mean "group"?`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob("web.hcl", []byte(strings.Replace(jobWith("", "", ""), tc.from, tc.to, 1)))
			var se *Error
			must.True(t, errors.As(err, &se), must.Sprintf("%v", err))
			var many interface{ Unwrap() []error }
			must.False(t, errors.As(err, &many), must.Sprintf("want one problem, got:\n%v", err))
			must.StrContains(t, se.Error(), tc.want)
		})
	}
}

func TestParseJob_RedactedMountFlagRefused(t *testing.T) {
	src := strings.Replace(jobWith("", "", ""), `attachment_mode = "file-system"`,
		"attachment_mode = \"file-system\"\n      mount_options { mount_flags = [\"noatime\", \"[REDACTED]\"] }", 1)
	_, err := ParseJob("web.hcl", []byte(src))
	must.EqError(t, err, `web.hcl:9: group "db": volume "data": mount_options: mount_flags[1] is "[REDACTED]", as the API shows every mount flag; put the real flag back`)
}

// The JSON of docs/job-spec.md.
func TestParseJob_DocsJSON(t *testing.T) {
	src := `{
  "ID": "db",
  "Type": "service",
  "TaskGroups": [{
    "Name": "db",
    "Count": 1,
    "Volumes": {"data": {"Type": "csi", "Source": "data",
      "AccessMode": "single-node-writer", "AttachmentMode": "file-system"}},
    "Tasks": [{
      "Name": "server",
      "Driver": "exec",
      "Config": {"command": "/usr/bin/env", "args": ["sh", "-c", "..."]},
      "Env": {"KEY": "value"},
      "Restart": {"Attempts": 2, "Interval": "30m", "Delay": "15s", "Mode": "fail"},
      "KillTimeout": 5000000000,
      "VolumeMounts": [{"Volume": "data", "Destination": "/srv/data"}],
      "CSIPluginConfig": null,
      "User": "nobody"
    }]
  }]
}`
	job, err := ParseJob("db.json", []byte(src))
	must.NoError(t, err)
	task := job.TaskGroups[0].Tasks[0]
	must.Eq(t, []*structs.VolumeMount{{Volume: "data", Destination: "/srv/data", PropagationMode: "private"}}, task.VolumeMounts)
	must.Eq(t, structs.DefaultRestartPolicy(structs.JobTypeService, false), *task.Restart)
	must.Nil(t, task.CSIPluginConfig)
	must.EqOp(t, "nobody", task.User)
}
