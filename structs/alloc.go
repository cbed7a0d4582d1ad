package structs

import "slices"

// Allocation desired statuses.
const (
	AllocDesiredStatusRun  = "run"
	AllocDesiredStatusStop = "stop"
)

// Allocation client statuses.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
)

// Allocation is one placement of a job's task group on a node.
type Allocation struct {
	ID            string
	Namespace     string
	Name          string
	JobID         string
	TaskGroup     string
	NodeID        string
	DesiredStatus string
	ClientStatus  string

	// Job is the job as it was when the allocation was placed: what the
	// client runs.
	Job *Job `json:",omitempty"`
	// ClientDescription says why the client status is what it is.
	ClientDescription string
	// DesiredDescription says why the servers stopped it ("replaced by
	// job version 3"), for people only: decisions read StopReason.
	DesiredDescription string `json:",omitempty"`
	// StopReason says why the servers stopped it, and ReplacedByVersion,
	// for an update, the job version that replaces it: what the
	// scheduler and the drainer decide on. An allocation stopped before
	// they were recorded has them filled from its DesiredDescription
	// when its snapshot row or raft entry is loaded (AllocStop.Legacy).
	StopReason        AllocStopReason `json:",omitempty"`
	ReplacedByVersion uint64          `json:",omitempty"`
	// JobVersion is the version of Job.
	JobVersion uint64
	// CreateTime is when it was placed, RunningSince when its client
	// last reported it running (0 while it is not): unix nanoseconds,
	// from the raft entries that wrote them.
	CreateTime   int64
	RunningSince int64 `json:",omitempty"`
	// FailTime is when its client reported it failed (unix nanoseconds,
	// the entry's time), 0 otherwise: the reschedule delay counts from it.
	FailTime int64 `json:",omitempty"`
	// RescheduleEvents are the replacements of failed allocations that
	// led to this one, oldest first; PreviousAllocation is the one it
	// replaced.
	RescheduleEvents   []RescheduleEvent `json:",omitempty"`
	PreviousAllocation string            `json:",omitempty"`
	// TaskStates by task name, reported by the client.
	TaskStates map[string]*TaskState
	// Timeline is when each step of its life was taken: the servers
	// stamp theirs, its client its own (ClientStep). Its claims keep
	// theirs on the volumes.
	Timeline Timeline `json:",omitempty"`

	CreateIndex uint64
	ModifyIndex uint64
}

// LookupTaskGroup returns the allocation's task group from its job, or nil.
func (a *Allocation) LookupTaskGroup() *TaskGroup {
	if a == nil {
		return nil
	}
	return a.Job.LookupTaskGroup(a.TaskGroup)
}

// TerminalStatus reports whether the allocation has stopped or will never run
// again: the server wants it stopped, or the client says it ended.
func (a *Allocation) TerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.ClientTerminalStatus()
}

// ClientTerminalStatus reports whether the allocation's tasks are over on
// its client: the client said it completed or failed, or its node went
// down (lost). A desired stop alone is not: the tasks may outlive their
// stop signal for their kill timeout, and a claim released under a live
// task is a second writer. Claims are released only from here.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Copy returns a copy.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Job = a.Job.Copy()
	c.RescheduleEvents = append([]RescheduleEvent(nil), a.RescheduleEvents...)
	c.Timeline = slices.Clone(a.Timeline)
	if a.TaskStates != nil {
		c.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, v := range a.TaskStates {
			c.TaskStates[k] = v.Copy()
		}
	}
	return &c
}

// Stub returns the list form of the allocation.
func (a *Allocation) Stub() *AllocListStub {
	return &AllocListStub{
		ID:            a.ID,
		Namespace:     a.Namespace,
		Name:          a.Name,
		JobID:         a.JobID,
		TaskGroup:     a.TaskGroup,
		NodeID:        a.NodeID,
		DesiredStatus: a.DesiredStatus,
		ClientStatus:  a.ClientStatus,
		JobVersion:    a.JobVersion,
		CreateIndex:   a.CreateIndex,
		ModifyIndex:   a.ModifyIndex,
	}
}

// AllocListStub is an allocation as lists and joins show it.
type AllocListStub struct {
	ID            string
	Namespace     string
	Name          string
	JobID         string
	TaskGroup     string
	NodeID        string
	DesiredStatus string
	ClientStatus  string
	JobVersion    uint64
	CreateIndex   uint64
	ModifyIndex   uint64
}
