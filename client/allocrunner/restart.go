package allocrunner

import (
	"fmt"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Default restart policies by job type (Nomad's), and for a CSI plugin
// task: while a node's plugin is down no volume can be mounted or
// unmounted there and claims wait, so it comes back within a second and
// never gives up for good (ten crashes in ten minutes wait out the rest
// of the ten minutes, then it starts again).
var (
	defaultServiceRestart = structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: structs.RestartModeFail}
	defaultBatchRestart   = structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: structs.RestartModeFail}
	defaultPluginRestart  = structs.RestartPolicy{Attempts: 10, Interval: 10 * time.Minute, Delay: time.Second, Mode: structs.RestartModeDelay}
)

// restartPolicy is the task's policy, or the default of a plugin task or
// of its job type.
func restartPolicy(t *structs.Task, jobType string) structs.RestartPolicy {
	if t.Restart != nil {
		return *t.Restart
	}
	if t.CSIPluginConfig != nil {
		return defaultPluginRestart
	}
	if jobType == structs.JobTypeBatch {
		return defaultBatchRestart
	}
	return defaultServiceRestart
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
