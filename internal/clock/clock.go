// Package clock is the leader's injected time: the volume watcher and the
// scheduler read it instead of the time package, so their tests move time
// by hand (clocktest.Fake). Leaf package.
package clock

import "time"

// Clock is a source of time.
type Clock interface {
	Now() time.Time
	// At sends the time once the clock reaches t (at once if it has). A
	// deadline, not a duration, so a wait computed from an earlier Now
	// does not move when time passes before it is set.
	At(t time.Time) <-chan time.Time
}

// System is the wall clock.
type System struct{}

var _ Clock = System{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// At returns time.After(time.Until(t)).
func (System) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// After sends the time once d has passed on c.
func After(c Clock, d time.Duration) <-chan time.Time { return c.At(c.Now().Add(d)) }
