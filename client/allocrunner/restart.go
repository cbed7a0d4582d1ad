package allocrunner

import (
	"fmt"
	"time"

	"github.com/berth-csi/berth/structs"
)

// restartPolicy is the task's policy, or the default of a plugin task or
// of its job type (the servers' jobs carry one; a job registered through
// the API without one gets the same).
func restartPolicy(t *structs.Task, jobType string) structs.RestartPolicy {
	if t.Restart != nil {
		return *t.Restart
	}
	return structs.DefaultRestartPolicy(jobType, t.CSIPluginConfig != nil)
}

// restartTracker counts restarts within the policy's interval.
type restartTracker struct {
	policy      structs.RestartPolicy
	windowStart time.Time
	count       int
}

// next decides on an exit at now: restart after the delay it returns, or
// not (false, with the reason). In "delay" mode, attempts used up wait out
// the rest of the interval and then start a new one.
func (t *restartTracker) next(now time.Time) (time.Duration, bool, string) {
	p := t.policy
	if t.windowStart.IsZero() || p.Interval > 0 && now.Sub(t.windowStart) >= p.Interval {
		t.windowStart, t.count = now, 0
	}
	t.count++
	if t.count <= p.Attempts {
		return p.Delay, true, ""
	}
	if p.Interval <= 0 {
		return 0, false, fmt.Sprintf("exceeded %d restart attempts", p.Attempts)
	}
	if p.Mode != structs.RestartModeDelay {
		return 0, false, fmt.Sprintf("exceeded %d restart attempts in %s", p.Attempts, p.Interval)
	}
	wait := max(t.windowStart.Add(p.Interval).Sub(now), p.Delay)
	t.windowStart, t.count = now.Add(wait), 0
	return wait, true, ""
}
