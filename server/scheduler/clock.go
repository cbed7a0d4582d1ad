package scheduler

import "github.com/berth-csi/berth/internal/clock"

// Clock is the scheduler's time: Now stamps the claims a plan reserves,
// and the job watcher waits on it.
type Clock = clock.Clock

// SystemClock is the wall clock.
var SystemClock Clock = clock.System{}
