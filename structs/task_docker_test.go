package structs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// dockerJob is a job Validate accepts: one docker task with cfg as config.
func dockerJob(cfg map[string]any) *Job {
	return &Job{ID: "db", Type: JobTypeService, TaskGroups: []*TaskGroup{{
		Name: "g", Count: 1,
		Tasks: []*Task{{Name: "pg", Driver: DriverDocker, Config: cfg, KillTimeout: 5 * time.Second}},
	}}}
}

func TestDockerTaskConfig_Reads(t *testing.T) {
	cases := []struct {
		name string
		cfg  map[string]any
		want *DockerConfig
	}{
		{"image alone takes the defaults", map[string]any{"image": "postgres:16"},
			&DockerConfig{Image: "postgres:16", NetworkMode: DockerNetworkBridge}},
		{"as the spec parser writes it", map[string]any{
			"image": "berth-test/db", "command": "/db", "args": []string{"-dir", "/data"}, "entrypoint": []string{"/bin/sh", "-c"},
			"privileged": true, "network_mode": "bridge", "labels": map[string]string{"team": "db"}, "force_pull": true,
		}, &DockerConfig{Image: "berth-test/db", Command: "/db", Args: []string{"-dir", "/data"}, Entrypoint: []string{"/bin/sh", "-c"},
			Privileged: true, NetworkMode: DockerNetworkBridge, Labels: map[string]string{"team": "db"}, ForcePull: true}},
		{"as JSON and msgpack decode it", map[string]any{
			"image": "x", "args": []any{"a"}, "entrypoint": []any{}, "labels": map[string]any{"a": "b"}, "network_mode": "none",
		}, &DockerConfig{Image: "x", Args: []string{"a"}, Entrypoint: []string{}, Labels: map[string]string{"a": "b"}, NetworkMode: DockerNetworkNone}},
		{"capabilities as people write them", map[string]any{
			"image": "x", "cap_add": []any{"SYS_ADMIN", "CAP_NET_ADMIN", "sys_admin"}, "cap_drop": []string{"ALL"},
		}, &DockerConfig{Image: "x", NetworkMode: DockerNetworkBridge, CapAdd: []string{"sys_admin", "net_admin"}, CapDrop: []string{"all"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DockerTaskConfig(tc.cfg)
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestDockerConfig_Cmd(t *testing.T) {
	must.Nil(t, (&DockerConfig{}).Cmd(), must.Sprint("the image's CMD"))
	must.Eq(t, []string{"-v"}, (&DockerConfig{Args: []string{"-v"}}).Cmd(), must.Sprint("args to the image's entrypoint"))
	must.Eq(t, []string{"/db", "-v"}, (&DockerConfig{Command: "/db", Args: []string{"-v"}}).Cmd())
}

// TestJob_Validate_Docker: docker tasks through the servers' check; each
// error names the group, the task, the key and what to write.
func TestJob_Validate_Docker(t *testing.T) {
	cases := []struct {
		name string
		cfg  map[string]any
		edit func(*Task)
		want string // "" when valid
	}{
		{"image only", map[string]any{"image": "postgres:16"}, nil, ""},
		{"every key", map[string]any{"image": "x", "command": "/x", "args": []any{"a"}, "entrypoint": []any{"/bin/sh"},
			"privileged": true, "network_mode": "host", "labels": map[string]any{"a": "b"}, "force_pull": false,
			"cap_add": []any{"sys_admin"}, "cap_drop": []any{"net_raw"}}, nil, ""},
		{"a docker plugin task", map[string]any{"image": "berth-test/hostpath", "privileged": true}, func(t *Task) {
			t.CSIPluginConfig = &TaskCSIPluginConfig{ID: "hostpath", Type: CSIPluginTypeMonolith, MountDir: "/csi"}
		}, ""},
		{"user and env as for exec", map[string]any{"image": "x"}, func(t *Task) {
			t.User, t.Env = "999", map[string]string{"PGDATA": "/data"}
		}, ""},

		{"no image", map[string]any{"command": "/x"}, nil,
			`group "g": task "pg": config: missing image; name the image to run, e.g. image = "postgres:16"`},
		{"no config", nil, nil, `task "pg": config: missing image`},
		{"empty image", map[string]any{"image": " "}, nil, `task "pg": config: image is empty`},
		{"image with a space", map[string]any{"image": "postgres 16"}, nil, `config: image "postgres 16" must not contain spaces`},
		{"image a number", map[string]any{"image": 16.0}, nil,
			`task "pg": config: image must be a string, not a number; write e.g. image = "postgres:16"`},
		{"misspelt key", map[string]any{"image": "x", "entrypont": []any{"/x"}}, nil,
			`task "pg": config: unknown key "entrypont"; did you mean "entrypoint"?`},
		{"unknown key", map[string]any{"image": "x", "ports": []any{"db"}}, nil,
			`config: unknown key "ports"; docker takes image, command, args, entrypoint, privileged, cap_add, cap_drop, network_mode, labels and force_pull`},
		{"misspelt capability", map[string]any{"image": "x", "cap_add": []any{"chown", "sys_admn", "CAP_NOPE"}}, nil,
			`config: cap_add[1] "sys_admn" is not a Linux capability; did you mean "sys_admin"?; cap_add[2] "CAP_NOPE" is not a Linux capability`},
		{"cap_drop a string", map[string]any{"image": "x", "cap_drop": "all"}, nil,
			`config: cap_drop must be a list of strings, not a string; write e.g. cap_drop = ["sys_admin"]`},
		{"args a string", map[string]any{"image": "x", "args": "-v"}, nil,
			`config: args must be a list of strings, not a string; write e.g. args = ["-c", "echo hello"]`},
		{"args not strings", map[string]any{"image": "x", "args": []any{"-v", true}}, nil, `config: args[1] must be a string, not a bool`},
		{"entrypoint a string", map[string]any{"image": "x", "entrypoint": "/bin/sh"}, nil, `config: entrypoint must be a list of strings`},
		{"empty command", map[string]any{"image": "x", "command": ""}, nil, `config: command is empty`},
		{"privileged quoted", map[string]any{"image": "x", "privileged": "true"}, nil,
			`config: privileged must be true or false, not a string; leave out the quotes`},
		{"force_pull a number", map[string]any{"image": "x", "force_pull": 1.0}, nil, `config: force_pull must be true or false, not a number`},
		{"bad network mode", map[string]any{"image": "x", "network_mode": "brige"}, nil,
			`config: network_mode "brige" must be "host", "bridge" or "none"; did you mean "bridge"?`},
		{"labels a list", map[string]any{"image": "x", "labels": []any{"a"}}, nil, `config: labels must be a map of strings, not a list`},
		{"label not a string", map[string]any{"image": "x", "labels": map[string]any{"n": 1.0}}, nil, `config: labels["n"] must be a string, not a number`},
		{"berth's own label", map[string]any{"image": "x", "labels": map[string]any{"berth.alloc_id": "x"}}, nil,
			`config: labels["berth.alloc_id"]: names starting with "berth." are berth's own`},
		{"exec config on a docker task", map[string]any{"command": "/bin/true"}, nil, `config: missing image`},
		{"several problems at once", map[string]any{"imag": "x", "privileged": "yes"}, nil,
			`config: unknown key "imag"; did you mean "image"?; privileged must be true or false, not a string; missing image`},
		{"bad user as for exec", map[string]any{"image": "x"}, func(t *Task) { t.User = "a:b" }, `task "pg": user "a:b" is not a user name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := dockerJob(tc.cfg)
			if tc.edit != nil {
				tc.edit(j.TaskGroups[0].Tasks[0])
			}
			err := j.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

func TestJob_Validate_Drivers(t *testing.T) {
	j := validJob()
	j.TaskGroups[0].Tasks[0].Driver = "dcoker"
	must.ErrorContains(t, j.Validate(), `task "t": driver "dcoker" is not supported; use "exec" or "docker"; did you mean "docker"?`)
	j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	err := j.Validate()
	must.ErrorContains(t, err, `driver "raw_exec" is not supported; use "exec" or "docker"`)
	must.StrNotContains(t, err.Error(), "missing command", must.Sprint("an unknown driver's config is not read as exec's"))

	j = validJob()
	j.TaskGroups[0].Tasks[0].Config["image"] = "postgres:16"
	must.ErrorContains(t, j.Validate(), `config: unknown key "image"; exec takes command and args (image is the docker driver's: set driver = "docker")`)
}

func TestTask_DockerConfig_NamesTheTask(t *testing.T) {
	task := &Task{Name: "pg", Driver: DriverDocker, Config: map[string]any{"image": "x", "network_mode": 1.0}}
	_, err := task.DockerConfig()
	must.ErrorIs(t, err, ErrBadRequest)
	must.EqError(t, err, `task "pg": config: network_mode must be a string, not a number; write e.g. network_mode = "bridge"`)
}

// TestJob_Docker_HTTPAndRPC: a docker job as the HTTP API decodes its
// JSON body, registered (ForRegister), then through the msgpack of RPC
// and raft, reads the same config.
func TestJob_Docker_HTTPAndRPC(t *testing.T) {
	body := `{"Job": {"ID": "db", "Type": "service", "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{
  "Name": "pg", "Driver": "docker", "User": "999", "KillTimeout": 5000000000,
  "Config": {"image": "berth-test/db", "args": ["-dir", "/data"], "labels": {"team": "db"}, "privileged": false, "network_mode": "bridge"}}]}]}}`
	want := &DockerConfig{Image: "berth-test/db", Args: []string{"-dir", "/data"}, Labels: map[string]string{"team": "db"}, NetworkMode: DockerNetworkBridge}

	var req JobRegisterRequest
	must.NoError(t, json.Unmarshal([]byte(body), &req))
	job, err := req.Job.ForRegister(DefaultNamespace, 100)
	must.NoError(t, err)
	got, err := job.TaskGroups[0].Tasks[0].DockerConfig()
	must.NoError(t, err)
	must.Eq(t, want, got)

	buf, err := Encode(PlanApplyRequestType, &PlanApplyRequest{Job: job})
	must.NoError(t, err)
	var decoded PlanApplyRequest
	must.NoError(t, Decode(buf[1:], &decoded))
	must.NoError(t, decoded.Job.Validate())
	got, err = decoded.Job.TaskGroups[0].Tasks[0].DockerConfig()
	must.NoError(t, err)
	must.Eq(t, want, got)

	bad := strings.Replace(body, `"image"`, `"img"`, 1)
	must.NoError(t, json.Unmarshal([]byte(bad), &req))
	_, err = req.Job.ForRegister(DefaultNamespace, 100)
	must.ErrorIs(t, err, ErrBadRequest)
	must.ErrorContains(t, err, `job "db": group "g": task "pg": config: unknown key "img"; did you mean "image"?`)
}

func TestNode_Drivers(t *testing.T) {
	n := &Node{Name: "c1", Drivers: map[string]*DriverInfo{
		DriverDocker: {Detected: true, Healthy: true, HealthDescription: "Docker 27.1.1"},
	}}
	must.True(t, n.DriverUsable(DriverExec))
	must.True(t, n.DriverUsable(DriverDocker))
	must.False(t, n.DriverUsable("podman"))
	must.True(t, (&Node{}).DriverUsable(DriverExec), must.Sprint("a client that reports no drivers runs exec"))
	must.False(t, (&Node{}).DriverUsable(DriverDocker))

	c := n.Copy()
	c.Drivers[DriverDocker].Healthy = false
	must.True(t, n.Drivers[DriverDocker].Healthy, must.Sprint("the copy is deep"))
	must.False(t, c.DriverUsable(DriverDocker))
	must.False(t, c.Drivers[DriverDocker].SameHealth(n.Drivers[DriverDocker]))
	later := n.Drivers[DriverDocker].Copy()
	later.UpdateTime = time.Unix(100, 0)
	must.True(t, later.SameHealth(n.Drivers[DriverDocker]), must.Sprint("the time alone is no change"))

	must.Eq(t, `task "plugin" is privileged; node "c1" does not allow privileged docker tasks: `+
		`set driver "docker" { allow_privileged = true } in its agent config`, PrivilegedTaskRefusal("plugin", DriverDocker, "c1"))

	d := &DriverInfo{Detected: true, Healthy: true, AllowCaps: []string{"sys_admin"}}
	c2 := d.Copy()
	c2.AllowCaps[0] = "all"
	must.EqOp(t, "sys_admin", d.AllowCaps[0], must.Sprint("the copy's caps are its own"))
	must.False(t, c2.SameHealth(d), must.Sprint("a change of allow_caps is sent"))
}

func TestCapsNotAllowed(t *testing.T) {
	must.SliceEmpty(t, CapsNotAllowed([]string{"sys_admin", "chown"}, []string{"chown", "sys_admin"}))
	must.SliceEmpty(t, CapsNotAllowed([]string{"sys_admin"}, []string{CapAll}))
	must.Eq(t, []string{"sys_admin", "all"}, CapsNotAllowed([]string{"chown", "sys_admin", "all"}, DockerDefaultAllowCaps))
	for _, c := range DockerDefaultAllowCaps {
		_, ok := NormalizeCapability(c)
		must.True(t, ok, must.Sprint(c))
	}
	must.Eq(t, `task "plugin" adds capabilities sys_admin, bpf; node "c1" does not allow them for docker tasks: `+
		`add them to driver "docker" { allow_caps = [...] } in its agent config`,
		CapsTaskRefusal("plugin", DriverDocker, "c1", []string{"sys_admin", "bpf"}))
}

func TestSuggestName(t *testing.T) {
	for name, want := range map[string]string{
		"imag": "image", "IMAGE": "image", "entry": "entrypoint", "forcepull": "force_pull", "ports": "", "x": "",
	} {
		must.EqOp(t, want, SuggestName(name, DockerConfigKeys), must.Sprint(name))
	}
}
