package structs

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestGroupChanged(t *testing.T) {
	a := validJob().TaskGroups[0]
	a.Tasks[0].Config["args"] = []string{"-c", "true"}
	b := a.Copy()
	b.Tasks[0].Config["args"] = []any{"-c", "true"}
	must.False(t, GroupChanged(a, b), must.Sprint("[]any as JSON and msgpack decode it equals []string"))

	b.Count, b.Update = 9, &UpdateStrategy{MaxParallel: 2}
	must.False(t, GroupChanged(a, b), must.Sprint("count and update replace nothing"))

	b.Tasks[0].Env = map[string]string{"V": "2"}
	must.True(t, GroupChanged(a, b))
	c := a.Copy()
	c.Volumes["data"].ReadOnly = true
	must.True(t, GroupChanged(a, c), must.Sprint("a volume change replaces"))

	// Mount flags are redacted in JSON ("[REDACTED]"): a change of them is
	// a change all the same.
	f := a.Copy()
	f.Volumes["data"].MountOptions = &CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}
	g := f.Copy()
	g.Volumes["data"].MountOptions.MountFlags = []string{"ro", "nodev"}
	must.True(t, GroupChanged(f, g), must.Sprint("a mount flag change replaces"))
	must.False(t, GroupChanged(f, f.Copy()), must.Sprint("the same mount flags are no change"))
	fj, gj := validJob(), validJob()
	fj.TaskGroups[0], gj.TaskGroups[0] = f, g
	must.True(t, SpecChanged(fj, gj), must.Sprint("a mount flag change is a new version"))

	j := validJob()
	k := j.Copy()
	k.Version, k.SubmitTime, k.ModifyIndex, k.Stop = 4, 99, 7, true
	must.False(t, SpecChanged(j, k), must.Sprint("the servers' fields are no change"))
	k.TaskGroups[0].Count = 3
	must.True(t, SpecChanged(j, k), must.Sprint("a count is a new version"))
}

func TestTaskGroup_UpdateStrategy(t *testing.T) {
	tg := &TaskGroup{}
	must.Eq(t, UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}, tg.UpdateStrategy())
	tg.Update = &UpdateStrategy{MaxParallel: 3}
	must.EqOp(t, 3, tg.UpdateStrategy().MaxParallel)
	must.EqOp(t, 10*time.Second, tg.UpdateStrategy().MinHealthyTime, must.Sprint("what it leaves out keeps the default"))
}

func TestJob_Validate_Update(t *testing.T) {
	cases := []struct {
		name   string
		update *UpdateStrategy
		count  int
		perAll bool
		want   string
	}{
		{"defaults", &UpdateStrategy{}, 2, true, ""},
		{"max_parallel up to count", &UpdateStrategy{MaxParallel: 2}, 2, true, ""},
		{"canary on a single-writer volume", &UpdateStrategy{MaxParallel: 3}, 2, false,
			`group "g": update: max_parallel 3 is more than count 2, but the group writes single-writer volume "data" (source "data")`},
		{"deadline not after healthy time", &UpdateStrategy{MinHealthyTime: time.Minute, HealthyDeadline: 30 * time.Second}, 2, true,
			`group "g": update: healthy_deadline 30s must be longer than min_healthy_time 1m0s`},
		{"negative", &UpdateStrategy{MaxParallel: -1}, 2, true, `update: max_parallel -1 must be 1 or more`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			j.TaskGroups[0].Count, j.TaskGroups[0].Update = tc.count, tc.update
			j.TaskGroups[0].Volumes["data"].PerAlloc = tc.perAll
			err := j.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func TestAllocation_Healthy(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &Allocation{ClientStatus: AllocClientStatusRunning, DesiredStatus: AllocDesiredStatusRun, RunningSince: now.Add(-10 * time.Second).UnixNano()}
	must.True(t, a.Healthy(now, 10*time.Second))
	must.False(t, a.Healthy(now, 11*time.Second))
	a.DesiredStatus = AllocDesiredStatusStop
	must.False(t, a.Healthy(now, 0), must.Sprint("a stopping allocation is not healthy"))
}
