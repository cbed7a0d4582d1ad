package structs

import (
	"fmt"
	"strconv"
	"time"
)

// Volume mount propagation modes (`volume_mount { propagation_mode }`).
const (
	PropagationPrivate       = "private"       // rprivate
	PropagationHostToTask    = "host-to-task"  // rslave
	PropagationBidirectional = "bidirectional" // rshared; needs a read-write volume
)

// Restart policy modes: after Attempts restarts within Interval, "fail"
// fails the task and "delay" waits out the interval and tries again.
const (
	RestartModeFail  = "fail"
	RestartModeDelay = "delay"
)

// RestartPolicy is a task's `restart` block.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
}

// DefaultRestartPolicy is the restart policy of a task that sets no
// restart block, and what a partial one is merged with: Nomad's defaults
// by job type, but for a CSI plugin task (plugin true). While a node's
// plugin is down no volume can be mounted or unmounted there and claims
// wait, so a plugin comes back within a second and never fails for good
// (ten crashes in ten minutes wait out the rest of the ten minutes).
func DefaultRestartPolicy(jobType string, plugin bool) RestartPolicy {
	switch {
	case plugin:
		return RestartPolicy{Attempts: 10, Interval: 10 * time.Minute, Delay: time.Second, Mode: RestartModeDelay}
	case jobType == JobTypeBatch:
		return RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartModeFail}
	}
	return RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail}
}

// VolumeMount is a task's `volume_mount` block: where a group volume
// appears in the task. Destination is absolute in the task's mount
// namespace, or relative to the task dir.
type VolumeMount struct {
	Volume          string // the group's volume alias
	Destination     string
	ReadOnly        bool
	PropagationMode string
}

// Task states, as TaskState.State.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is what the client reports of one task of an allocation.
type TaskState struct {
	State      string
	Failed     bool
	Restarts   int
	StartedAt  time.Time
	FinishedAt time.Time
	Events     []*TaskEvent
}

// TaskEvent is one thing that happened to a task ("Started", "Terminated:
// exit code 1", "Plugin became healthy", "Volume data staged").
type TaskEvent struct {
	Type    string
	Message string
	Time    time.Time
}

// Copy returns a deep copy.
func (ts *TaskState) Copy() *TaskState {
	if ts == nil {
		return nil
	}
	c := *ts
	if ts.Events != nil {
		c.Events = make([]*TaskEvent, len(ts.Events))
		for i, e := range ts.Events {
			ec := *e
			c.Events[i] = &ec
		}
	}
	return &c
}

// Task users. A task runs as DefaultTaskUser unless it names another
// (task { user }); a CSI plugin task that names none runs as RootUser,
// since it mounts. Root needs the client's allow_root_tasks.
const (
	DefaultTaskUser = "nobody"
	RootUser        = "root"
)

// maxUserLength is the longest user name a task may give (useradd's).
const maxUserLength = 32

// RunAs is the user the task's spec asks for: User when set, RootUser for
// a CSI plugin task that sets none, else "" (the driver's default,
// DefaultTaskUser).
func (t *Task) RunAs() string {
	switch {
	case t.User != "":
		return t.User
	case t.CSIPluginConfig != nil:
		return RootUser
	}
	return ""
}

// NeedsRoot reports whether the task's spec asks for root: user "root"
// or uid 0, or a CSI plugin task that names no user. (A client also
// refuses another name that has uid 0 there.)
func (t *Task) NeedsRoot() bool {
	if t.Driver == DriverDocker {
		// Its user is the container's: root by name or uid, or a plugin's
		// that names none (it mounts). The image's own user is known only
		// on the client, which refuses a root one there.
		return t.User != "" && DockerUserIsRoot(t.User) || t.User == "" && t.CSIPluginConfig != nil
	}
	u := t.RunAs()
	if u == RootUser {
		return true
	}
	uid, err := strconv.ParseUint(u, 10, 32)
	return err == nil && uid == 0
}

// RootTaskOn is the group's first task that needs root and that node n
// does not run as root: the client does not allow root tasks, and for a
// docker task its engine does not remap root either. Nil if none is.
func (tg *TaskGroup) RootTaskOn(n *Node) *Task {
	if n.AllowRootTasks {
		return nil
	}
	for _, t := range tg.Tasks {
		if t == nil || !t.NeedsRoot() {
			continue
		}
		if d := n.Drivers[DriverDocker]; t.Driver == DriverDocker && d != nil && d.UserNamespaces {
			continue
		}
		return t
	}
	return nil
}

// RootTaskRefusal says why a task that needs root cannot run on a node
// (named by its name) whose client does not allow root tasks: the
// scheduler's placement failure and the client's own refusal.
func RootTaskRefusal(task, node string) string {
	return fmt.Sprintf("task %s needs root (a csi_plugin task, or user = %q); node %s does not allow root tasks: "+
		"set client { allow_root_tasks = true } in its agent config", QuoteName(task), RootUser, QuoteName(node))
}

// DockerRootTaskRefusal says why a container that would run as root (its
// user, or its image's: who says which) cannot run on a node whose client
// does not allow root tasks and whose engine does not remap root.
func DockerRootTaskRefusal(task, node, who string) string {
	return fmt.Sprintf("task %s would run as root in its container (%s); node %s does not allow root tasks and its "+
		"Docker engine does not remap root (no user namespaces): set the task's user to one its image has (user = \"65534\"), "+
		"set client { allow_root_tasks = true } in the node's agent config, or run its engine with --userns-remap",
		QuoteName(task), who, QuoteName(node))
}

// ValidateTaskUser checks a task's user: a numeric uid, or a user name of
// 1 to 32 letters, digits, '_', '.' and '-' that starts with a letter or
// '_' (what useradd takes). It says nothing of whether the user exists on
// a client: that is the client's check.
func ValidateTaskUser(s string) error {
	if s == "" {
		return NewError(CodeBadRequest, "user is empty; name a user, e.g. %q, or a numeric uid", DefaultTaskUser)
	}
	if s[0] >= '0' && s[0] <= '9' {
		if uid, err := strconv.ParseUint(s, 10, 32); err != nil || uid == 1<<32-1 {
			return NewError(CodeBadRequest, "user %s is not a user name or a numeric uid (0 to 4294967294)", QuoteName(s))
		}
		return nil
	}
	if len(s) > maxUserLength {
		return NewError(CodeBadRequest, "user %s is %d bytes long; a user name has at most %d", QuoteName(s), len(s), maxUserLength)
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
			(i > 0 && (r == '.' || r == '-' || (r >= '0' && r <= '9')))
		if !ok {
			return NewError(CodeBadRequest, "user %s is not a user name (letters, digits, '_', '.' and '-', starting with a letter or '_') "+
				"or a numeric uid", QuoteName(s))
		}
	}
	return nil
}

// KillSignals are the signals a task's kill_signal may name: the ones
// programs trap to shut down cleanly (nginx SIGQUIT, many SIGINT), and
// SIGKILL for a task that must not linger.
var KillSignals = []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGKILL"}
