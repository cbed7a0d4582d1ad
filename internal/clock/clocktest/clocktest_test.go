package clocktest

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock"
)

func TestFake_FiresOnlyWhenAdvancedPast(t *testing.T) {
	c := New()
	t0 := c.Now()
	ch := clock.After(c, time.Second)
	c.AwaitTimer(t, t0.Add(time.Second))
	c.Advance(999 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("fired before its time")
	default:
	}
	c.Advance(time.Millisecond)
	must.Eq(t, t0.Add(time.Second), <-ch)
	past := c.At(t0) // already reached: at once
	must.Eq(t, c.Now(), <-past)
}
