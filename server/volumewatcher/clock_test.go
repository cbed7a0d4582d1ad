package volumewatcher_test

import (
	"sync"
	"testing"
	"time"

	"github.com/berth-csi/berth/server/volumewatcher"
)

// fakeClock is a clock the test moves by hand; nothing fires until
// Advance passes it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever a timer is added
}

type fakeTimer struct {
	since, at time.Time
	ch        chan time.Time
}

var _ volumewatcher.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, &fakeTimer{since: c.now, at: at, ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves the clock by d and fires the timers it passes.
func (c *fakeClock) Advance(d time.Duration) {
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
// for it to reach at: the watcher has looked and sleeps until at.
func (c *fakeClock) AwaitTimer(t *testing.T, at time.Time) {
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
