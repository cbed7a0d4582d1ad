package structs

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/ugorji/go/codec"
)

// UpdateStrategy is a group's `update` block: how a change of the group's
// tasks, volumes or other placement-relevant settings replaces its running
// allocations.
type UpdateStrategy struct {
	// MaxParallel is how many allocations are replaced at once: the
	// number of the group's places that may be between an old allocation
	// stopped and its replacement healthy.
	MaxParallel int
	// MinHealthyTime is how long a replacement runs before it counts as
	// healthy and the next one may start.
	MinHealthyTime time.Duration
	// HealthyDeadline is how long a replacement has to become healthy;
	// past it, or when it fails, the update stops and the allocations not
	// yet replaced keep running.
	HealthyDeadline time.Duration
}

// Update defaults, Nomad's.
const (
	DefaultUpdateMaxParallel     = 1
	DefaultUpdateMinHealthyTime  = 10 * time.Second
	DefaultUpdateHealthyDeadline = 5 * time.Minute
)

// UpdateStrategy is the group's update block with the defaults filled in.
func (tg *TaskGroup) UpdateStrategy() UpdateStrategy {
	u := UpdateStrategy{MaxParallel: DefaultUpdateMaxParallel, MinHealthyTime: DefaultUpdateMinHealthyTime,
		HealthyDeadline: DefaultUpdateHealthyDeadline}
	if tg.Update == nil {
		return u
	}
	if tg.Update.MaxParallel > 0 {
		u.MaxParallel = tg.Update.MaxParallel
	}
	if tg.Update.MinHealthyTime > 0 {
		u.MinHealthyTime = tg.Update.MinHealthyTime
	}
	if tg.Update.HealthyDeadline > 0 {
		u.HealthyDeadline = tg.Update.HealthyDeadline
	}
	return u
}

// validateUpdate checks the group's update block: positive numbers, a
// deadline longer than the healthy time, and no max_parallel over count on
// a group that writes a single-writer volume (a replacement cannot run
// beside the allocation it replaces, so more in parallel than count is a
// canary that can never be placed; Nomad #13380).
func (tg *TaskGroup) validateUpdate(p *problems, at string) {
	u := tg.Update
	if u == nil {
		return
	}
	if u.MaxParallel < 0 {
		p.add("%supdate: max_parallel %d must be 1 or more", at, u.MaxParallel)
	}
	if u.MinHealthyTime < 0 || u.HealthyDeadline < 0 {
		p.add("%supdate: min_healthy_time and healthy_deadline must not be negative", at)
	}
	p.maxDurations(at+"update: ", "min_healthy_time", u.MinHealthyTime, "healthy_deadline", u.HealthyDeadline)
	eff := tg.UpdateStrategy()
	if eff.HealthyDeadline <= eff.MinHealthyTime {
		p.add("%supdate: healthy_deadline %s must be longer than min_healthy_time %s", at, eff.HealthyDeadline, eff.MinHealthyTime)
	}
	if alias, v := tg.singleWriterVolume(); v != nil && u.MaxParallel > tg.Count && tg.Count > 0 {
		p.add("%supdate: max_parallel %d is more than count %d, but the group writes single-writer volume %s (source %s): "+
			"a replacement cannot run beside the allocation it replaces; set max_parallel to %d or less",
			at, u.MaxParallel, tg.Count, QuoteName(alias), QuoteName(v.Source), tg.Count)
	}
}

// singleWriterVolume is a volume the group claims for writing with a
// single-writer access mode, and its alias; nil if none.
func (tg *TaskGroup) singleWriterVolume() (string, *VolumeRequest) {
	aliases := make([]string, 0, len(tg.Volumes))
	for alias := range tg.Volumes {
		aliases = append(aliases, alias)
	}
	slices.Sort(aliases) // the same volume named in every message
	for _, alias := range aliases {
		v := tg.Volumes[alias]
		if v == nil || v.ReadOnly {
			continue
		}
		if v.AccessMode.SingleWriter() {
			return alias, v
		}
	}
	return "", nil
}

// GroupChanged reports whether group b differs from a in what its
// allocations run or where they may run (tasks, volumes, disconnect),
// which replaces them; count and the lifecycle blocks (update,
// reschedule, migrate) do not.
// It compares the groups' canonical msgpack (sameSpec), so a config
// decoded as []any equals one written as []string.
func GroupChanged(a, b *TaskGroup) bool {
	if a == nil || b == nil {
		return a != b
	}
	return !sameSpec(placementSpec(a), placementSpec(b))
}

// placementSpec is the group without what changes no allocation.
func placementSpec(tg *TaskGroup) *TaskGroup {
	c := *tg
	c.Count, c.Update, c.Reschedule, c.Migrate = 0, nil, nil, nil
	return &c
}

// SpecChanged reports whether job b differs from a as a user wrote it:
// anything but the indexes, the version, the submit time and Stop.
func SpecChanged(a, b *Job) bool {
	if a == nil || b == nil {
		return a != b
	}
	return !sameSpec(userSpec(a), userSpec(b))
}

// NextJobVersion is the version job next gets when it replaces stored
// (nil for a new job): stored's when the spec is the same (SpecChanged),
// and isNew false; the next one when it changed, 0 for a new job, and
// isNew true. The state store numbers versions by it; the planner
// reports the one a run would give.
func NextJobVersion(stored, next *Job) (version uint64, isNew bool) {
	switch {
	case stored == nil:
		return 0, true
	case SpecChanged(stored, next):
		return stored.Version + 1, true
	}
	return stored.Version, false
}

func userSpec(j *Job) *Job {
	c := *j
	c.CreateIndex, c.ModifyIndex, c.Version, c.SubmitTime, c.Stop = 0, 0, 0, 0, false
	return &c
}

// sameSpec reports whether a and b encode to the same canonical msgpack:
// what raft would store, map keys in order. Not JSON, which redacts mount
// flags (a change of them would not be seen) and writes a config's []any
// and []string alike only by chance of its encoder.
func sameSpec(a, b any) bool {
	var ba, bb []byte
	errA := codec.NewEncoderBytes(&ba, canonicalHandle).Encode(a)
	errB := codec.NewEncoderBytes(&bb, canonicalHandle).Encode(b)
	return errA == nil && errB == nil && bytes.Equal(ba, bb)
}

// Healthy reports whether the allocation has run for at least minHealthy
// at now: it runs, is wanted, and RunningSince is that far back.
func (a *Allocation) Healthy(now time.Time, minHealthy time.Duration) bool {
	return a.ClientStatus == AllocClientStatusRunning && a.DesiredStatus == AllocDesiredStatusRun &&
		a.RunningSince > 0 && !now.Before(time.Unix(0, a.RunningSince).Add(minHealthy))
}

// UpdateDescription is the DesiredDescription of an allocation stopped
// to be replaced by a newer version of its job.
func UpdateDescription(version uint64) string {
	return fmt.Sprintf("replaced by job version %d", version)
}

// LookupTaskGroup returns the job's group named name, or nil (also for
// a nil job).
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg != nil && tg.Name == name {
			return tg
		}
	}
	return nil
}
