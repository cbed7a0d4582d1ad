package scheduler

import "time"

// Clock is the scheduler's time: Now stamps the claims a plan reserves,
// After times the job watcher's waits.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the time package's clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

var _ Clock = systemClock{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
