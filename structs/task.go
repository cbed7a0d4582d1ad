package structs

import "time"

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
