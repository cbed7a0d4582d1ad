package structs

import (
	"strconv"
	"strings"
	"time"
)

// Job types.
const (
	JobTypeService = "service"
	JobTypeBatch   = "batch"
	JobTypeSystem  = "system"
)

// Job is a user's declared workload.
type Job struct {
	ID         string
	Namespace  string
	Name       string
	Type       string
	Stop       bool
	TaskGroups []*TaskGroup
	// Constraints, Affinities and Spreads are the job's placement rules,
	// which every group's add to (see the same fields of TaskGroup).
	Constraints []*Constraint `json:",omitempty"`
	Affinities  []*Affinity   `json:",omitempty"`
	Spreads     []*Spread     `json:",omitempty"`
	// Version counts the job's changes: 0 when first registered, one more
	// each time it is registered with a different spec (SpecChanged).
	// The servers set it.
	Version uint64
	// SubmitTime is when this version was registered (unix nanoseconds),
	// stamped by the servers.
	SubmitTime int64

	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroup is a set of tasks placed together.
type TaskGroup struct {
	Name    string
	Count   int
	Volumes map[string]*VolumeRequest
	Tasks   []*Task
	// Disconnect is what the group's client does when it cannot reach the
	// servers; nil is every default.
	Disconnect *DisconnectStrategy `json:",omitempty"`
	// Update is how a change of the group replaces its allocations; nil
	// is every default (see UpdateStrategy).
	Update *UpdateStrategy `json:",omitempty"`
	// Reschedule is how a failed allocation is replaced; nil is the job
	// type's default (see ReschedulePolicy).
	Reschedule *ReschedulePolicy `json:",omitempty"`
	// Migrate is how a node drain moves the group's allocations; nil is
	// every default (see MigrateMaxParallel).
	Migrate *MigrateStrategy `json:",omitempty"`
	// Constraints are what a node must be to run the group (with the
	// job's), Affinities what it had better be, Spreads how the group's
	// allocations spread over a node attribute's values.
	Constraints []*Constraint `json:",omitempty"`
	Affinities  []*Affinity   `json:",omitempty"`
	Spreads     []*Spread     `json:",omitempty"`
}

// DisconnectStrategy is a group's `disconnect` block.
type DisconnectStrategy struct {
	// StopOnClient, when false, keeps the group's tasks running on a client
	// cut off from the servers for the fence interval. Unset (nil) is true:
	// a group holding a write claim is stopped by its own client before
	// the servers free that claim (see docs/architecture.md, "Fence").
	StopOnClient *bool `json:",omitempty"`
}

// StopsOnClient reports whether the group's client stops it when cut off
// from the servers for the fence interval (true unless the group opts out).
func (tg *TaskGroup) StopsOnClient() bool {
	return tg.Disconnect == nil || tg.Disconnect.StopOnClient == nil || *tg.Disconnect.StopOnClient
}

// WritesVolumes reports whether the group claims any volume for writing.
func (tg *TaskGroup) WritesVolumes() bool {
	for _, req := range tg.Volumes {
		if req == nil {
			continue
		}
		if m, err := ClaimModeFor(req.AccessMode, req.ReadOnly); err == nil && m == CSIVolumeClaimWrite {
			return true
		}
	}
	return false
}

// VolumeRequest is a group's `volume "alias"` block.
type VolumeRequest struct {
	Name           string
	Type           string
	Source         string
	ReadOnly       bool
	AccessMode     CSIVolumeAccessMode
	AttachmentMode CSIVolumeAttachmentMode
	PerAlloc       bool
	MountOptions   *CSIMountOptions `json:",omitempty"`
}

// Task is one process of a group.
type Task struct {
	Name        string
	Driver      string
	Config      map[string]any // exec: "command" (string), "args" ([]string); docker: see DockerTaskConfig
	Env         map[string]string
	Restart     *RestartPolicy `json:",omitempty"`
	KillTimeout time.Duration  // from the stop signal to SIGKILL; 0 means 5s
	// KillSignal is the signal a stop sends first (KillSignals); "" is
	// SIGTERM.
	KillSignal      string `json:",omitempty"`
	VolumeMounts    []*VolumeMount
	CSIPluginConfig *TaskCSIPluginConfig `json:",omitempty"`
	// User is who the task runs as: a user name or a numeric uid on the
	// client. Empty is the default: DefaultTaskUser, or root for a CSI
	// plugin task (see RunAs). Root needs the client's allow_root_tasks.
	User string `json:",omitempty"`
	// Resources is what the task may use of its node, enforced on the
	// client and accounted by the scheduler; nil is every default (see
	// ResourcesOrDefault).
	Resources *Resources `json:",omitempty"`
}

// TaskCSIPluginConfig is a task's `csi_plugin` block: the task is a plugin.
type TaskCSIPluginConfig struct {
	ID       string
	Type     CSIPluginType
	MountDir string
	// StagePublishBaseDir, when set, is where the plugin is told to stage
	// and publish volumes: the plugin's dir is bound there as well as at
	// MountDir (where its socket is). Empty: MountDir.
	StagePublishBaseDir string `json:",omitempty"`
	HealthTimeout       int64  // nanoseconds
}

// CSIPluginIDs lists the plugins this job's tasks run, deduplicated.
func (j *Job) CSIPluginIDs() []string {
	seen := map[string]bool{}
	var ids []string
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t != nil && t.CSIPluginConfig != nil && t.CSIPluginConfig.ID != "" && !seen[t.CSIPluginConfig.ID] {
				seen[t.CSIPluginConfig.ID] = true
				ids = append(ids, t.CSIPluginConfig.ID)
			}
		}
	}
	return ids
}

// Copy returns a deep copy.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Constraints, c.Affinities, c.Spreads = copyPlacement(j.Constraints, j.Affinities, j.Spreads)
	if j.TaskGroups != nil {
		c.TaskGroups = make([]*TaskGroup, len(j.TaskGroups))
		for i, tg := range j.TaskGroups {
			c.TaskGroups[i] = tg.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy.
func (tg *TaskGroup) Copy() *TaskGroup {
	if tg == nil {
		return nil
	}
	c := *tg
	c.Constraints, c.Affinities, c.Spreads = copyPlacement(tg.Constraints, tg.Affinities, tg.Spreads)
	if tg.Update != nil {
		u := *tg.Update
		c.Update = &u
	}
	if tg.Reschedule != nil {
		r := *tg.Reschedule
		c.Reschedule = &r
	}
	if tg.Migrate != nil {
		m := *tg.Migrate
		c.Migrate = &m
	}
	if tg.Disconnect != nil {
		d := *tg.Disconnect
		if d.StopOnClient != nil {
			v := *d.StopOnClient
			d.StopOnClient = &v
		}
		c.Disconnect = &d
	}
	if tg.Volumes != nil {
		c.Volumes = make(map[string]*VolumeRequest, len(tg.Volumes))
		for k, v := range tg.Volumes {
			c.Volumes[k] = v.Copy()
		}
	}
	if tg.Tasks != nil {
		c.Tasks = make([]*Task, len(tg.Tasks))
		for i, t := range tg.Tasks {
			c.Tasks[i] = t.Copy()
		}
	}
	return &c
}

// Copy returns a deep copy.
func (r *VolumeRequest) Copy() *VolumeRequest {
	if r == nil {
		return nil
	}
	c := *r
	c.MountOptions = r.MountOptions.Copy()
	return &c
}

// Copy returns a deep copy. A null entry of a list stays null: Validate
// reports it.
func (t *Task) Copy() *Task {
	if t == nil {
		return nil
	}
	c := *t
	c.Env = copyStringMap(t.Env)
	if t.Config != nil {
		c.Config = make(map[string]any, len(t.Config))
		for k, v := range t.Config {
			c.Config[k] = v
		}
	}
	if t.CSIPluginConfig != nil {
		pc := *t.CSIPluginConfig
		c.CSIPluginConfig = &pc
	}
	if t.Restart != nil {
		rp := *t.Restart
		c.Restart = &rp
	}
	c.Resources = t.Resources.Copy()
	if t.VolumeMounts != nil {
		c.VolumeMounts = make([]*VolumeMount, len(t.VolumeMounts))
		for i, vm := range t.VolumeMounts {
			if vm != nil {
				vmc := *vm
				c.VolumeMounts[i] = &vmc
			}
		}
	}
	return &c
}

// AllocIndex reads the index N from an allocation name "job.group[N]".
func AllocIndex(name string) (int, bool) {
	if !strings.HasSuffix(name, "]") {
		return 0, false
	}
	i := strings.LastIndexByte(name, '[')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+1 : len(name)-1])
	return n, err == nil && n >= 0
}

// SourceFor is the ID of the volume the request names for allocation
// index idx: its source, or "source[idx]" for a per_alloc volume, as
// Nomad names them.
func (r *VolumeRequest) SourceFor(idx int) string {
	if !r.PerAlloc {
		return r.Source
	}
	return r.Source + "[" + strconv.Itoa(idx) + "]"
}
