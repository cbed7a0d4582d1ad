package structs

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// validJob is a job Validate accepts: one group with a volume and one
// task that mounts it.
func validJob() *Job {
	return &Job{ID: "web", Type: JobTypeService, TaskGroups: []*TaskGroup{{
		Name: "g", Count: 2,
		Volumes: map[string]*VolumeRequest{"data": {Name: "data", Type: "csi", Source: "data", PerAlloc: true,
			AccessMode: CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: CSIVolumeAttachmentModeFilesystem}},
		Tasks: []*Task{{
			Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/true"}, KillTimeout: 5 * time.Second,
			Restart:      &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail},
			VolumeMounts: []*VolumeMount{{Volume: "data", Destination: "/data"}},
		}},
	}}}
}

func TestJob_Validate(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
		want string // "" when valid
	}{
		{"valid", func(*Job) {}, ""},
		{"valid args", func(j *Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"-c", "true"} }, ""},
		{"valid without a restart block", func(j *Job) { j.TaskGroups[0].Tasks[0].Restart = nil }, ""},
		{"valid restart of 0 attempts", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Interval: time.Minute, Mode: RestartModeFail}
		}, ""},

		// Null entries are refused by position, never dereferenced.
		{"null group", func(j *Job) { j.TaskGroups = append(j.TaskGroups, nil) }, "group 1 is null"},
		{"null task", func(j *Job) { j.TaskGroups[0].Tasks = []*Task{nil} }, `group "g": task 0 is null`},
		{"null volume_mount", func(j *Job) { j.TaskGroups[0].Tasks[0].VolumeMounts = []*VolumeMount{nil} },
			`group "g": task "t": volume_mount 0 is null`},
		{"null volume", func(j *Job) { j.TaskGroups[0].Volumes["data"] = nil }, `group "g": volume "data" is null`},
		{"unknown group policy", func(j *Job) {
			j.TaskGroups[0].Volumes["data"].MountOptions = &CSIMountOptions{GroupPolicy: "fsgroup"}
		}, `volume "data": mount_options group_policy "fsgroup" is not one of "on-root-mismatch", "always" or "none"`},
		{"valid group policy", func(j *Job) {
			j.TaskGroups[0].Volumes["data"].MountOptions = &CSIMountOptions{GroupPolicy: GroupPolicyNone}
		}, ""},

		// Names: one rule (ValidateName).
		{"NUL in the ID", func(j *Job) { j.ID = "web\x00" }, `job ID "web\x00" must not contain '\x00'`},
		{"CR in the ID", func(j *Job) { j.ID = "web\r" }, `must not contain '\r'`},
		{"1 MiB ID", func(j *Job) { j.ID = strings.Repeat("w", 1<<20) }, "is 1048576 bytes long; the most is 128"},
		{"no ID", func(j *Job) { j.ID = "" }, "job ID is missing"},
		{"bad namespace", func(j *Job) { j.Namespace = "a b" }, `namespace "a b" must not contain ' '`},
		{"dot-dot task", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = ".." }, `task name ".." must not start with '.'`},
		{"slash task", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = "a/b" }, `task name "a/b" must not contain '/'`},
		{"empty task name", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = "" }, `task name is missing`},
		{"empty group name", func(j *Job) { j.TaskGroups[0].Name = "" }, `group name is missing`},
		{"dot-dot group", func(j *Job) { j.TaskGroups[0].Name = ".." }, `group name ".." must not start with '.'`},
		{"slash group", func(j *Job) { j.TaskGroups[0].Name = "a/b" }, `group name "a/b" must not contain '/'`},
		{"task twice", func(j *Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, j.TaskGroups[0].Tasks[0].Copy())
		}, `task "t" is given twice`},
		{"bad volume source", func(j *Job) { j.TaskGroups[0].Volumes["data"].Source = "../x" }, `source: volume ID "../x" must not start with '.'`},

		{"args not strings", func(j *Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"-c", 1.0} }, "config: args[1] must be a string"},
		{"args a string", func(j *Job) { j.TaskGroups[0].Tasks[0].Config["args"] = "-c" }, "config: args must be a list of strings"},
		{"unknown config key", func(j *Job) { j.TaskGroups[0].Tasks[0].Config["image"] = "x" }, `config: unknown key "image"; exec takes command and args`},
		{"no command", func(j *Job) { delete(j.TaskGroups[0].Tasks[0].Config, "command") }, "config: missing command"},
		{"negative kill_timeout", func(j *Job) { j.TaskGroups[0].Tasks[0].KillTimeout = -time.Second }, "kill_timeout -1s must not be negative"},
		{"kill_timeout of 292 years", func(j *Job) { j.TaskGroups[0].Tasks[0].KillTimeout = math.MaxInt64 },
			"kill_timeout 2562047h47m16.854775807s is longer than the most berth takes, 168h0m0s"},
		{"restart delay of a year", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: 1, Interval: 24 * 365 * time.Hour, Delay: 24 * 365 * time.Hour}
		}, "restart: interval 8760h0m0s is longer than the most berth takes"},
		{"reschedule max_delay of a month", func(j *Job) { j.TaskGroups[0].Reschedule = &ReschedulePolicy{MaxDelay: 30 * 24 * time.Hour} },
			"reschedule: max_delay 720h0m0s is longer than the most berth takes"},
		{"count 2 on a single-node-writer volume without per_alloc", func(j *Job) {
			j.TaskGroups[0].Count, j.TaskGroups[0].Volumes["data"].PerAlloc = 2, false
		},
			`volume "data": access_mode "single-node-writer" lets one allocation use the volume, but count is 2; set per_alloc = true`},
		{"per_alloc in a system job", func(j *Job) { j.Type = JobTypeSystem; j.TaskGroups[0].Volumes["data"].PerAlloc = true },
			`volume "data": per_alloc cannot be used in a system job`},
		{"volume_mount climbing out", func(j *Job) { j.TaskGroups[0].Tasks[0].VolumeMounts[0].Destination = "../../../../etc" },
			`volume_mount "data": destination "../../../../etc" climbs out of the task dir`},
		{"volume_mount not clean", func(j *Job) { j.TaskGroups[0].Tasks[0].VolumeMounts[0].Destination = "/data/../etc" },
			`destination "/data/../etc" is not a clean path; write "/etc"`},
		{"unknown kill_signal", func(j *Job) { j.TaskGroups[0].Tasks[0].KillSignal = "sigint" },
			`kill_signal "sigint" is not one berth sends; use "SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH" or "SIGKILL"; did you mean "SIGINT"?`},
		{"valid user name", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "www-data" }, ""},
		{"valid uid", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "1000" }, ""},
		{"user with a space", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "no body" },
			`task "t": user "no body" is not a user name (letters, digits, '_', '.' and '-', starting with a letter or '_') or a numeric uid`},
		{"user with a colon", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "a:b" }, `task "t": user "a:b" is not a user name`},
		{"uid too large", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "4294967295" },
			`task "t": user "4294967295" is not a user name or a numeric uid (0 to 4294967294)`},
		{"uid and letters", func(j *Job) { j.TaskGroups[0].Tasks[0].User = "1000x" }, `user "1000x" is not a user name or a numeric uid`},
		{"user too long", func(j *Job) { j.TaskGroups[0].Tasks[0].User = strings.Repeat("u", 33) }, "is 33 bytes long; a user name has at most 32"},
		{"negative health_timeout", func(j *Job) {
			j.TaskGroups[0].Tasks[0].CSIPluginConfig = &TaskCSIPluginConfig{ID: "hp", Type: CSIPluginTypeNode, MountDir: "/csi", HealthTimeout: -1}
		}, "health_timeout -1ns must not be negative"},
		{"relative stage_publish_base_dir", func(j *Job) {
			j.TaskGroups[0].Tasks[0].CSIPluginConfig = &TaskCSIPluginConfig{ID: "hp", Type: CSIPluginTypeNode, MountDir: "/csi", StagePublishBaseDir: "csi/volumes"}
		}, `csi_plugin: stage_publish_base_dir "csi/volumes" must be an absolute path other than /`},
		{"stage_publish_base_dir in mount_dir", func(j *Job) {
			j.TaskGroups[0].Tasks[0].CSIPluginConfig = &TaskCSIPluginConfig{ID: "hp", Type: CSIPluginTypeNode, MountDir: "/csi", StagePublishBaseDir: "/csi/volumes"}
		}, `stage_publish_base_dir "/csi/volumes" and mount_dir "/csi" are inside one another`},
		{"stage_publish_base_dir the mount_dir", func(j *Job) {
			j.TaskGroups[0].Tasks[0].CSIPluginConfig = &TaskCSIPluginConfig{ID: "hp", Type: CSIPluginTypeNode, MountDir: "/csi", StagePublishBaseDir: "/csi/"}
		}, ""},

		// Restart policies that would restart a task hundreds of times in seconds.
		{"restart delay 0", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: 500, Interval: 10 * time.Minute, Mode: RestartModeDelay}
		}, "restart: delay 0s is too short; it must be at least 1s"},
		{"restart attempts over the interval", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: 1000, Interval: 10 * time.Second, Delay: time.Second, Mode: RestartModeFail}
		}, "1000 attempts with a delay of 1s do not fit in an interval of 10s"},
		{"restart attempts that overflow", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: 1 << 62, Interval: time.Hour, Delay: 4 * time.Second}
		}, "do not fit in an interval of 1h0m0s"},
		{"restart interval 0", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: 1, Delay: time.Second}
		}, "restart: interval 0s is too short; it must be at least 5s"},
		{"restart negative attempts", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Attempts: -1, Interval: time.Minute}
		}, "restart: attempts -1 must be 0 or more"},
		{"restart bad mode", func(j *Job) { j.TaskGroups[0].Tasks[0].Restart.Mode = "again" }, `restart: mode "again" must be "fail" or "delay"`},
		{"restart delay with 0 attempts", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Restart = &RestartPolicy{Interval: time.Minute, Mode: RestartModeDelay}
		}, `mode "delay" with 0 attempts never restarts the task`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			tc.edit(j)
			err := j.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
			must.Less(t, 4096, len(err.Error()), must.Sprint("the error stays short"))
		})
	}
}

// TestJob_Validate_ManyProblemsMakeAShortError: a request with a million
// null tasks lists a few and counts the rest.
func TestJob_Validate_ManyProblemsMakeAShortError(t *testing.T) {
	j := validJob()
	j.TaskGroups[0].Tasks = make([]*Task, 1_000_000)
	err := j.Validate()
	must.ErrorIs(t, err, ErrBadRequest)
	must.StrContains(t, err.Error(), "task 0 is null")
	must.StrContains(t, err.Error(), "and 999980 more")
	must.Less(t, 4096, len(err.Error()))
}

// TestJob_Validate_PluginID: a plugin ID names a dir on every client, so
// one that could leave its parent dir is refused.
func TestJob_Validate_PluginID(t *testing.T) {
	job := func(id string) *Job {
		return &Job{ID: "p", Type: JobTypeSystem, TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{
			Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/true"},
			CSIPluginConfig: &TaskCSIPluginConfig{ID: id, Type: CSIPluginTypeNode, MountDir: "/csi"}}}}}}
	}
	must.NoError(t, job("hostpath").Validate())
	for id, want := range map[string]string{
		"..":      `must not start with '.'`,
		".hidden": `must not start with '.'`,
		"a/b":     `must not contain '/'`,
		"a b":     `must not contain ' '`,
		"":        `csi_plugin: plugin ID is missing`,
	} {
		must.ErrorContains(t, job(id).Validate(), want)
		if id != "" {
			must.ErrorContains(t, job(id).Validate(), `csi_plugin: plugin ID "`+id+`" `+want)
		}
	}
}

func TestJob_ValidateCount(t *testing.T) {
	j := validJob()
	must.NoError(t, j.ValidateCount(2))

	j.TaskGroups[0].Count = 2147483648
	err := j.ValidateCount(10_000)
	must.ErrorIs(t, err, ErrBadRequest)
	must.StrContains(t, err.Error(), `group "g": count 2147483648 is over this cluster's limit of 10000 allocations per job`)
	must.StrContains(t, err.Error(), "job_max_count")

	// The groups' counts add up.
	j = validJob()
	g2 := j.TaskGroups[0].Copy()
	g2.Name = "g2"
	j.TaskGroups = append(j.TaskGroups, g2)
	must.NoError(t, j.ValidateCount(4))
	must.ErrorContains(t, j.ValidateCount(3), "the groups' counts add up to more than this cluster's limit of 3")
}

// TestJob_Copy_KeepsNullEntries: a copy of a job with null entries does
// not panic; Validate then reports them.
func TestJob_Copy_KeepsNullEntries(t *testing.T) {
	j := validJob()
	j.TaskGroups = append(j.TaskGroups, nil)
	j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, nil)
	j.TaskGroups[0].Tasks[0].VolumeMounts = append(j.TaskGroups[0].Tasks[0].VolumeMounts, nil)
	j.TaskGroups[0].Volumes["other"] = nil
	c := j.Copy()
	must.Eq(t, j, c)
	must.Nil(t, c.TaskGroups[1])
	must.SliceEmpty(t, c.CSIPluginIDs())
	must.True(t, c.TaskGroups[0].WritesVolumes())
	must.ErrorIs(t, c.Validate(), ErrBadRequest)
}

func TestCSIVolume_Copy_KeepsNullEntries(t *testing.T) {
	v := redactedVolume()
	v.RequestedCapabilities = append(v.RequestedCapabilities, nil)
	v.Topologies = []*CSITopology{nil}
	v.ReadClaims, v.WriteClaims, v.PastClaims = nil, nil, nil // a row at rest stores none
	c := v.Copy()
	must.NotNil(t, c.ReadClaims, must.Sprint("a copy has claim maps to write into"))
	must.NotNil(t, c.WriteClaims)
	must.NotNil(t, c.PastClaims)
	c.ReadClaims, c.WriteClaims, c.PastClaims = nil, nil, nil
	must.Eq(t, v, c)
	must.ErrorContains(t, c.Validate(), "capability 2 is null")
}

func TestTask_NeedsRoot(t *testing.T) {
	plugin := &TaskCSIPluginConfig{ID: "hp", Type: CSIPluginTypeMonolith, MountDir: "/csi"}
	cases := []struct {
		name  string
		task  Task
		runAs string
		root  bool
	}{
		{"default", Task{}, "", false},
		{"nobody", Task{User: "nobody"}, "nobody", false},
		{"root", Task{User: "root"}, "root", true},
		{"uid 0", Task{User: "0"}, "0", true},
		{"uid 00", Task{User: "00"}, "00", true},
		{"uid 1000", Task{User: "1000"}, "1000", false},
		{"plugin with no user", Task{CSIPluginConfig: plugin}, "root", true},
		{"plugin as nobody", Task{CSIPluginConfig: plugin, User: "nobody"}, "nobody", false},
		{"docker as root: the container's root", Task{Driver: DriverDocker, User: "root"}, "root", true},
		{"docker as uid 00:0", Task{Driver: DriverDocker, User: "00:0"}, "00:0", true},
		{"docker as 1000:0", Task{Driver: DriverDocker, User: "1000:0"}, "1000:0", false},
		{"docker with no user: the image's, known on the client", Task{Driver: DriverDocker}, "", false},
		{"docker plugin with no user", Task{Driver: DriverDocker, CSIPluginConfig: plugin}, "root", true},
		{"docker plugin as nobody", Task{Driver: DriverDocker, CSIPluginConfig: plugin, User: "nobody"}, "nobody", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.runAs, tc.task.RunAs())
			must.Eq(t, tc.root, tc.task.NeedsRoot())
		})
	}
	tg := &TaskGroup{Tasks: []*Task{{Name: "web"}, nil, {Name: "plugin", CSIPluginConfig: plugin}}}
	strict := &Node{}
	must.Eq(t, "plugin", tg.RootTaskOn(strict).Name)
	must.Nil(t, tg.RootTaskOn(&Node{AllowRootTasks: true}))
	must.Nil(t, (&TaskGroup{Tasks: []*Task{{Name: "web"}}}).RootTaskOn(strict))
	docker := &TaskGroup{Tasks: []*Task{{Name: "db", Driver: DriverDocker, User: "root"}}}
	must.Eq(t, "db", docker.RootTaskOn(strict).Name)
	remapped := &Node{Drivers: map[string]*DriverInfo{DriverDocker: {Detected: true, Healthy: true, UserNamespaces: true}}}
	must.Nil(t, docker.RootTaskOn(remapped), must.Sprint("an engine that remaps root runs it as nobody of the host"))
	must.Eq(t, "plugin", tg.RootTaskOn(remapped).Name, must.Sprint("an exec task's root is the host's"))
	must.Eq(t, `task "plugin" needs root (a csi_plugin task, or user = "root"); node "n1" does not allow root tasks: `+
		`set client { allow_root_tasks = true } in its agent config`, RootTaskRefusal("plugin", "n1"))
}
