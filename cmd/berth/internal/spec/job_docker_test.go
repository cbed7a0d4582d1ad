package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// dockerJobHCL is a containerized plugin and a containerized writer.
const dockerJobHCL = `job "db" {
  group "plugin" {
    task "plugin" {
      driver = "docker"
      config {
        image      = "berth-test/hostpath:1"
        entrypoint = ["/berth-hostpath", "-v=${BERTH_NODE_NAME}"]
        args       = ["-root", "/var/lib/berth-hostpath", "-node-id", "${BERTH_NODE_NAME}"]
        privileged = true
      }
      csi_plugin {
        id   = "hostpath"
        type = "monolith"
      }
    }
  }
  group "db" {
    task "db" {
      driver = "docker"
      config {
        image        = "berth-test/db"
        command      = "/db"
        args         = ["-dir", "/data"]
        entrypoint   = ["/bin/tini", "--"]
        network_mode = "bridge"
        force_pull   = false
        cap_add      = ["CAP_NET_BIND_SERVICE", "chown"]
        cap_drop     = ["ALL"]
        labels {
          team = "storage"
        }
      }
      env { PGDATA = "/data" }
      user         = "999"
      kill_timeout = "20s"
    }
  }
}
`

func TestParseJob_Docker(t *testing.T) {
	job, err := ParseJob("db.hcl", []byte(dockerJobHCL))
	must.NoError(t, err)
	plugin, db := job.TaskGroups[0].Tasks[0], job.TaskGroups[1].Tasks[0]
	must.EqOp(t, structs.DriverDocker, plugin.Driver)
	must.Eq(t, map[string]any{"image": "berth-test/hostpath:1", "entrypoint": []string{"/berth-hostpath", "-v=${BERTH_NODE_NAME}"},
		"args": []string{"-root", "/var/lib/berth-hostpath", "-node-id", "${BERTH_NODE_NAME}"}, "privileged": true}, plugin.Config)
	must.NotNil(t, plugin.CSIPluginConfig, must.Sprint("a plugin may ship as an image"))
	must.Eq(t, map[string]any{"image": "berth-test/db", "command": "/db", "args": []string{"-dir", "/data"},
		"entrypoint": []string{"/bin/tini", "--"}, "network_mode": "bridge", "force_pull": false,
		"labels": map[string]string{"team": "storage"}, "cap_add": []string{"net_bind_service", "chown"}, "cap_drop": []string{"all"}}, db.Config)
	must.EqOp(t, "999", db.User)
	must.EqOp(t, 20*time.Second, db.KillTimeout)
	must.Eq(t, map[string]string{"PGDATA": "/data"}, db.Env)

	// What the parser writes, the servers accept and the client reads.
	must.NoError(t, job.Validate())
	cfg, err := db.DockerConfig()
	must.NoError(t, err)
	must.Eq(t, []string{"/db", "-dir", "/data"}, cfg.Cmd())
	must.Eq(t, []string{"net_bind_service", "chown"}, cfg.CapAdd)
	cfg, err = plugin.DockerConfig()
	must.NoError(t, err)
	must.EqOp(t, structs.DockerNetworkBridge, cfg.NetworkMode, must.Sprint("the default"))
	must.True(t, cfg.Privileged)
}

func TestParseJob_Docker_JSON(t *testing.T) {
	src := `{"ID": "db", "TaskGroups": [{"Name": "db", "Tasks": [{"Name": "db", "Driver": "docker",
  "Config": {"image": "berth-test/db", "args": ["-dir", "/data"], "labels": {"team": "storage"}, "privileged": false}}]}]}`
	job, err := ParseJob("db.json", []byte(src))
	must.NoError(t, err)
	must.Eq(t, map[string]any{"image": "berth-test/db", "args": []string{"-dir", "/data"},
		"labels": map[string]string{"team": "storage"}, "privileged": false}, job.TaskGroups[0].Tasks[0].Config)
	must.NoError(t, job.Validate())

	_, err = ParseJob("db.json", []byte(strings.Replace(src, `"image"`, `"Image"`, 1)))
	must.ErrorContains(t, err, `db.json:2: group "db": task "db": config: unknown field "Image"; did you mean "image"?`)
}

// dockerTask is a job whose one task is a docker task with body inside
// its config block, and extra after it.
func dockerTask(body, extra string) string {
	return `job "web" {
  group "db" {
    task "server" {
      driver = "docker"
      config {
        ` + body + `
      }
      ` + extra + `
    }
  }
}
`
}

func TestParseJob_Docker_Errors(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"no image", dockerTask(`command = "/bin/sh"`, ""), 5, "group[db].task[server].config.image",
			`web.hcl:5: group "db": task "server": config: missing image; name the image to run, e.g. image = "postgres:16"; it must be on the node already, or set force_pull = true`},
		{"empty image", dockerTask(`image = ""`, ""), 6, "group[db].task[server].config.image",
			`group "db": task "server": config: image is empty; name the image to run`},
		{"image with a space", dockerTask(`image = "postgres 16"`, ""), 6, "group[db].task[server].config.image",
			`config: image "postgres 16" must not contain spaces`},
		{"image as a number", dockerTask(`image = 16`, ""), 6, "group[db].task[server].config.image",
			`config: image must be a string, not a number; put it in quotes`},
		{"misspelt image", dockerTask(`imgae = "postgres:16"`, ""), 6, "group[db].task[server].config.imgae",
			`config: unknown field "imgae"; did you mean "image"?`},
		{"unknown field", dockerTask("image = \"x\"\n        ports = [\"db\"]", ""), 7, "group[db].task[server].config.ports",
			`config: unknown field "ports"; valid fields are image, command, args, entrypoint, privileged, cap_add, cap_drop, network_mode, labels, force_pull`},
		{"misspelt capability", dockerTask("image = \"x\"\n        cap_add = [\"chown\", \"SYS_ADMN\"]", ""), 7, "group[db].task[server].config.cap_add[1]",
			`config: cap_add[1] "SYS_ADMN" is not a Linux capability; did you mean "sys_admin"?`},
		{"cap_drop a string", dockerTask("image = \"x\"\n        cap_drop = \"all\"", ""), 7, "group[db].task[server].config.cap_drop",
			`config: cap_drop must be a list of strings such as ["a", "b"], not a string`},
		{"bad network mode", dockerTask("image = \"x\"\n        network_mode = \"brige\"", ""), 7, "group[db].task[server].config.network_mode",
			`config: network_mode "brige" is not valid; one of "host", "bridge", "none"; did you mean "bridge"?`},
		{"privileged quoted", dockerTask("image = \"x\"\n        privileged = \"true\"", ""), 7, "group[db].task[server].config.privileged",
			`config: privileged must be true or false, not a string; leave out the quotes`},
		{"force_pull a number", dockerTask("image = \"x\"\n        force_pull = 1", ""), 7, "group[db].task[server].config.force_pull",
			`config: force_pull must be true or false, not a number`},
		{"args a string", dockerTask("image = \"x\"\n        args = \"-v\"", ""), 7, "group[db].task[server].config.args",
			`config: args must be a list of strings such as ["a", "b"], not a string`},
		{"entrypoint not strings", dockerTask("image = \"x\"\n        entrypoint = [1]", ""), 7, "group[db].task[server].config.entrypoint[0]",
			`config: entrypoint[0] must be a string, not a number`},
		{"empty command", dockerTask("image = \"x\"\n        command = \" \"", ""), 7, "group[db].task[server].config.command",
			`config: command is empty`},
		{"berth's own label", dockerTask("image = \"x\"\n        labels = { \"berth.alloc_id\" = \"x\" }", ""), 7,
			"group[db].task[server].config.labels.berth.alloc_id", `config: labels: berth.alloc_id is berth's own`},
		{"labels a list", dockerTask("image = \"x\"\n        labels = [\"a\"]", ""), 7, "group[db].task[server].config.labels",
			`config: labels must be a block (labels { ... }), not a list`},
		{"no config", strings.Replace(dockerTask("", ""), "config {\n        \n      }", "", 1), 3, "group[db].task[server].config",
			`group "db": task "server": missing config; add a config block with image = "name:tag"`},
		{"misspelt driver", strings.Replace(dockerTask(`image = "x"`, ""), `"docker"`, `"dokcer"`, 1), 4, "group[db].task[server].driver",
			`driver "dokcer" is not supported; berth runs tasks with driver = "exec" or "docker"; did you mean "docker"?`},
		{"image on an exec task", strings.Replace(dockerTask("command = \"/bin/sh\"\n        image = \"x\"", ""), `"docker"`, `"exec"`, 1), 7,
			"group[db].task[server].config.image",
			`config: unknown field "image"; exec takes command and args (image is the docker driver's: set driver = "docker")`},
		{"kill_signal misspelt", dockerTask(`image = "x"`, `kill_signal = "SIGINTT"`), 8, "group[db].task[server].kill_signal",
			`"SIGINTT" is not a signal berth sends; use one of "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGKILL"; did you mean "SIGINT"?`},
		{"bad user as for exec", dockerTask(`image = "x"`, `user = "a:b"`), 8, "group[db].task[server].user", `user "a:b" is not a user name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := ParseJob("web.hcl", []byte(tc.src))
			must.Nil(t, job)
			var all []*Error
			var many interface{ Unwrap() []error }
			var one *Error
			switch {
			case errors.As(err, &many):
				for _, e := range many.Unwrap() {
					all = append(all, e.(*Error))
				}
			case errors.As(err, &one):
				all = []*Error{one}
			default:
				t.Fatalf("not a spec error: %v", err)
			}
			found := false
			for _, e := range all {
				if e.Line == tc.wantLine && e.Field == tc.wantField && strings.Contains(e.Error(), tc.wantMsg) {
					found = true
				}
			}
			must.True(t, found, must.Sprintf("want an error at line %d, field %q, containing %q; got:\n%v", tc.wantLine, tc.wantField, tc.wantMsg, err))
		})
	}
}

// A misspelt image is one problem, not also a missing image.
func TestParseJob_Docker_MisspeltImageIsOneProblem(t *testing.T) {
	_, err := ParseJob("web.hcl", []byte(dockerTask(`imag = "x"`, "")))
	var se *Error
	must.True(t, errors.As(err, &se), must.Sprintf("%v", err))
	var many interface{ Unwrap() []error }
	must.False(t, errors.As(err, &many), must.Sprintf("want one problem, got:\n%v", err))
	must.StrContains(t, se.Error(), `unknown field "imag"; did you mean "image"?`)
}
