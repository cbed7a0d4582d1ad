// Package clocktest is a clock.Clock that tests move by hand.
package clocktest

import (
	"sync"
	"testing"
	"time"

	"github.com/berth-csi/berth/internal/clock"
)

// Fake is a clock the test moves by hand; nothing fires until Advance
// passes it.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*timer
	changed chan struct{} // closed and replaced whenever a timer is added
}

type timer struct {
	since, at time.Time
	ch        chan time.Time
}

var _ clock.Clock = (*Fake)(nil)

// New returns a Fake at a fixed time.
func New() *Fake {
	return &Fake{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), changed: make(chan struct{})}
}

// Now is the fake's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At fires once Advance reaches at (at once if the clock has).
func (c *Fake) At(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, &timer{since: c.now, at: at, ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves the clock by d and fires the timers it passes.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.now
	}
	c.timers = kept
}

// AwaitTimer blocks until someone, since the clock's current time, waits
// for it to reach at.
func (c *Fake) AwaitTimer(t testing.TB, at time.Time) {
	t.Helper()
	failsafe := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, tm := range c.timers {
			if tm.since.Equal(c.now) && tm.at.Equal(at) {
				c.mu.Unlock()
				return
			}
		}
		changed, now := c.changed, c.now
		c.mu.Unlock()
		select {
		case <-changed:
		case <-failsafe:
			t.Fatalf("nobody waits, at %s, for the clock to reach %s", now, at)
		}
	}
}
