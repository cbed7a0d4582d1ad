package docker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/structs"
)

func validConfig() *TaskConfig {
	return &TaskConfig{
		AllocID: "8f2c", JobID: "shop", Namespace: "default", Group: "data", TaskName: "db", NodeName: "node-1",
		TaskDir: "/data/allocs/8f2c/db/local", AllocDir: "/data/allocs/8f2c/alloc",
		StdoutPath: "/data/allocs/8f2c/alloc/logs/db.stdout.0", StderrPath: "/data/allocs/8f2c/alloc/logs/db.stderr.0",
		LogRoot: "/data/allocs/8f2c",
		Image:   "postgres:16",
	}
}

func TestTaskConfig_Resolve(t *testing.T) {
	c := validConfig()
	c.Command = "/bin/${NAME}"
	c.Args = []string{"--dir=${BERTH_TASK_DIR}/pg", "${UNKNOWN}", "$NAME"}
	c.Entrypoint = []string{"/init", "${BERTH_TASK_NAME}"}
	c.Env = map[string]string{"NAME": "pg", "BERTH_TASK_DIR": "/spoofed"}
	c.Extra = map[string]string{"BERTH_NODE_NAME": "node-1"}
	c.Labels = map[string]string{"team": "storage"}
	c.Mounts = []Mount{
		{Source: "/vol/a", Destination: "data"},
		{Source: "/vol/b/", Destination: "/srv/b", ReadOnly: true, Propagation: structs.PropagationHostToTask},
		{Source: "/vol/c", Destination: "/srv/c", Propagation: structs.PropagationBidirectional},
		{Source: "/csi/disk", Destination: "/dev/disk", Device: true},
		{Source: "/csi/ro", Destination: "/dev/ro", Device: true, ReadOnly: true},
	}
	s, err := c.resolve(Config{})
	must.NoError(t, err)
	must.Nil(t, s.rules, must.Sprint("a task that is not a node plugin gets no host devices beyond its volumes"))
	must.Eq(t, []container.DeviceMapping{{PathOnHost: "/csi/disk", PathInContainer: "/dev/disk", CgroupPermissions: "rwm"},
		{PathOnHost: "/csi/ro", PathInContainer: "/dev/ro", CgroupPermissions: "r"}}, s.devices, must.Sprint("block volumes are devices, not mounts"))
	must.Eq(t, "berth-db-8f2c", s.name)
	must.Eq(t, NetworkBridge, s.network, must.Sprint("bridge by default"))
	must.Eq(t, []string{"CAP_NET_RAW"}, s.capDrop, must.Sprint("NET_RAW dropped by default"))
	must.Eq(t, []string{"/bin/pg", "--dir=/berth/local/pg", "${UNKNOWN}", "$NAME"}, s.cmd)
	must.Eq(t, []string{"/init", "db"}, s.entry)
	must.Eq(t, []string{"BERTH_ALLOC_DIR=/berth/alloc", "BERTH_ALLOC_ID=8f2c", "BERTH_NODE_NAME=node-1",
		"BERTH_TASK_DIR=/berth/local", "BERTH_TASK_NAME=db", "NAME=pg"}, s.env)
	must.Eq(t, map[string]string{LabelAllocID: "8f2c", LabelJobID: "shop", LabelNamespace: "default",
		LabelGroup: "data", LabelTask: "db", LabelStdoutPath: c.StdoutPath, LabelStderrPath: c.StderrPath,
		LabelLogRoot: c.LogRoot, "team": "storage"}, s.labels)
	bind := func(src, dst string, ro bool, p mount.Propagation) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro, BindOptions: &mount.BindOptions{Propagation: p}}
	}
	must.Eq(t, []mount.Mount{
		bind(c.TaskDir, "/berth/local", false, mount.PropagationRPrivate),
		bind(c.AllocDir+"/data", "/berth/alloc/data", false, mount.PropagationRPrivate),
		bind(c.AllocDir+"/tmp", "/berth/alloc/tmp", false, mount.PropagationRPrivate),
		bind("/vol/a", "/berth/local/data", false, mount.PropagationRPrivate),
		bind("/vol/b", "/srv/b", true, mount.PropagationRSlave),
		bind("/vol/c", "/srv/c", false, mount.PropagationRShared),
	}, s.mounts)

	// A plugin task gets the host's /dev and /sys, and block devices.
	c = validConfig()
	c.Plugin = true
	s, err = c.resolve(Config{})
	must.NoError(t, err)
	devs := bind("/dev", "/dev", false, mount.PropagationPrivate)
	devs.BindOptions.NonRecursive = true
	must.SliceContains(t, s.mounts, devs)
	must.SliceContains(t, s.mounts, bind("/sys", "/sys", true, mount.PropagationRPrivate))
	must.Eq(t, PluginDeviceRules, s.rules)

	c = validConfig()
	c.Args = []string{"-v"}
	c.NetworkMode = NetworkBridge
	s, err = c.resolve(Config{})
	must.NoError(t, err)
	must.Eq(t, []string{"-v"}, s.cmd, must.Sprint("args alone are the entrypoint's"))
	must.Nil(t, s.entry)
	must.Eq(t, NetworkBridge, s.network)
	must.Nil(t, s.capAdd)

	c = validConfig()
	c.NetworkMode = NetworkHost
	s, err = c.resolve(Config{AllowHostNetwork: true})
	must.NoError(t, err)
	must.Eq(t, NetworkHost, s.network)

	c = validConfig()
	c.CapAdd, c.CapDrop = []string{"net_raw"}, []string{"mknod"}
	s, err = c.resolve(Config{AllowCaps: []string{"net_raw"}})
	must.NoError(t, err)
	must.Eq(t, []string{"CAP_MKNOD"}, s.capDrop, must.Sprint("added back, NET_RAW is not dropped"))

	c = validConfig()
	c.CapAdd, c.CapDrop = []string{"chown"}, []string{"all"}
	s, err = c.resolve(Config{})
	must.NoError(t, err, must.Sprint("chown is in Docker's default set, which allow_caps defaults to"))
	must.Eq(t, []string{"CAP_CHOWN"}, s.capAdd)
	must.Eq(t, []string{"ALL"}, s.capDrop)
	c.CapAdd = []string{"sys_admin", "net_admin"}
	s, err = c.resolve(Config{AllowCaps: []string{"sys_admin", "net_admin"}})
	must.NoError(t, err)
	must.Eq(t, []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN"}, s.capAdd)
	_, err = c.resolve(Config{AllowCaps: []string{structs.CapAll}})
	must.NoError(t, err, must.Sprint("all allows every capability"))
}

func TestTaskConfig_Resolve_Refused(t *testing.T) {
	cases := []struct {
		name   string
		change func(*TaskConfig)
		target error
		want   string
	}{
		{"no image", func(c *TaskConfig) { c.Image = "" }, ErrInvalidTask, "no image"},
		{"no alloc", func(c *TaskConfig) { c.AllocID = "" }, ErrInvalidTask, "no task name or alloc ID"},
		{"relative task dir", func(c *TaskConfig) { c.TaskDir = "db/local" }, ErrInvalidTask, `task dir "db/local"`},
		{"privileged", func(c *TaskConfig) { c.Privileged = true }, ErrPrivilegedNotAllowed, `allow_privileged = true`},
		{"caps beyond allow_caps", func(c *TaskConfig) { c.CapAdd = []string{"chown", "sys_admin", "net_admin"} },
			ErrCapsNotAllowed, `adds capabilities sys_admin, net_admin; node "node-1" does not allow them`},
		{"network", func(c *TaskConfig) { c.NetworkMode = "container:x" }, ErrInvalidTask, `network mode "container:x"`},
		{"host network", func(c *TaskConfig) { c.NetworkMode = NetworkHost }, ErrHostNetworkNotAllowed,
			`asks for network_mode = "host"; node "node-1" does not allow docker tasks on the host's network: set driver "docker" { allow_host_network = true }`},
		{"berth label", func(c *TaskConfig) { c.Labels = map[string]string{"berth.task": "x"} }, ErrInvalidTask, `label "berth.task"`},
		{"relative source", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "vol", Destination: "/v"}} }, ErrInvalidTask, `source "vol"`},
		{"no destination", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol"}} }, ErrInvalidTask, "no destination"},
		{"leaves task dir", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol", Destination: "../x"}} }, ErrInvalidTask, "leaves the task dir"},
		{"hides task dir", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol", Destination: "."}} }, ErrInvalidTask, "would hide the task dir"},
		{"hides alloc data", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol", Destination: "/berth/alloc/data"}} }, ErrInvalidTask,
			"would hide the alloc dir's data/"},
		{"hides root", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol", Destination: "/"}} }, ErrInvalidTask, "would hide the image's root"},
		{"bad propagation", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/vol", Destination: "/v", Propagation: "shared"}} }, ErrInvalidTask, `propagation mode "shared"`},
		{"device in the task dir", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/csi/disk", Destination: "disk", Device: true}} }, ErrInvalidTask,
			"a container gets a block device outside the task and alloc dirs (they are nodev)"},
		{"read-only bidirectional", func(c *TaskConfig) {
			c.Mounts = []Mount{{Source: "/vol", Destination: "/v", ReadOnly: true, Propagation: structs.PropagationBidirectional}}
		}, ErrInvalidTask, "needs a read-write mount"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.change(c)
			_, err := c.resolve(Config{})
			must.ErrorIs(t, err, tc.target)
			must.StrContains(t, err.Error(), `task "db"`)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

func TestContainerName(t *testing.T) {
	must.Eq(t, "berth-db_1.x-a1", containerName("db_1.x", "a1"))
	spaced, slashed := containerName("my db", "a1"), containerName("my-db", "a1")
	must.NotEq(t, spaced, slashed, must.Sprint("a cleaned name does not collide with a clean one"))
	must.StrHasPrefix(t, "berth-my-db-", spaced)
	must.False(t, nameInvalid.MatchString(spaced))
	must.Eq(t, spaced, containerName("my db", "a1"), must.Sprint("the name is stable"))
}

func TestStampWriter(t *testing.T) {
	dir := t.TempDir()
	logs := logFiles{root: dir, stdout: filepath.Join(dir, "logs", "db.stdout.0"), stderr: filepath.Join(dir, "logs", "db.stderr.0")}
	must.Eq(t, time.Time{}, logs.copiedUntil(), must.Sprint("no file: nothing copied"))
	out, err := logs.open(logs.stdout)
	must.NoError(t, err)
	defer out.Close()
	errf, err := logs.open(logs.stderr)
	must.NoError(t, err)
	defer errf.Close()

	var last time.Time
	h := &Handle{logger: hclog.NewNullLogger()}
	ow := &stampWriter{f: out, last: &last, h: h}
	ew := &stampWriter{f: errf, last: &last, h: h}
	t1 := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	t2 := t1.Add(time.Millisecond + 7)
	for _, w := range []struct {
		w     *stampWriter
		frame string
	}{
		{ow, t1.Format(time.RFC3339Nano) + " first line\n"},
		{ew, t2.Format(time.RFC3339Nano) + " an error\n"},
		{ow, "not stamped\n"},
	} {
		n, err := w.w.Write([]byte(w.frame))
		must.NoError(t, err)
		must.Eq(t, len(w.frame), n)
	}
	must.Eq(t, t2, last)
	must.Eq(t, "first line\nnot stamped\n", readAll(t, out.Name()))
	must.Eq(t, "an error\n", readAll(t, errf.Name()))
	must.True(t, logs.copiedUntil().Equal(t2), must.Sprint("the later file's time is its last frame's stamp"))
	must.True(t, logFiles{stdout: errf.Name(), stderr: filepath.Join(dir, "none")}.copiedUntil().Equal(t2))

	// A log a task replaced with a link is neither read for its time nor
	// appended to.
	must.NoError(t, os.Remove(logs.stdout))
	must.NoError(t, os.Remove(logs.stderr))
	host := filepath.Join(t.TempDir(), "host")
	must.NoError(t, os.WriteFile(host, []byte("host\n"), 0o600))
	must.NoError(t, os.Symlink(host, logs.stdout))
	must.Eq(t, time.Time{}, logs.copiedUntil(), must.Sprint("a link is not berth's log"))
	_, err = logs.open(logs.stdout)
	must.ErrorIs(t, err, beneath.ErrLink)
	must.Eq(t, "host\n", readAll(t, host))
}

func TestExitResult_String(t *testing.T) {
	must.Eq(t, "exit code 0", ExitResult{}.String())
	must.True(t, ExitResult{}.Successful())
	must.Eq(t, "killed by signal terminated", ExitResult{ExitCode: 143, Signal: 15}.String())
	must.False(t, ExitResult{ExitCode: 143, Signal: 15}.Successful())
	must.Eq(t, "exit code 137 (out of memory)", ExitResult{ExitCode: 137, OOMKilled: true}.String())
	r := ExitResult{ExitCode: -1, Err: errors.New("container removed")}
	must.Eq(t, "container removed", r.String())
	must.False(t, r.Successful())
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	return string(b)
}
