package volumewatcher_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
)

// TestWatcher_Run_CountsRetries: each failed step counts once, by the
// state whose step failed, when its retry is scheduled; steps that
// succeed count nothing. (Counted as differences: this package's tests do
// not run in parallel, and each stops its watcher before it ends.)
func TestWatcher_Run_CountsRetries(t *testing.T) {
	retries := func(state string) float64 {
		return telemetrytest.Counter(t, telemetry.ClaimReleaseRetries, state)
	}
	nodeBefore, controllerBefore := retries("unpublishing"), retries("node-detached")
	h := newHarness(t, exact())
	h.fail["node/a1"], h.fail["controller/a1"] = 2, 1
	h.releasing(t, "v1", "a1")
	t0 := h.clock.Now()
	h.run(t)

	mustCheckpoint(t, h, "a1", unpublishing, "node detach of a1: attempt 1 refused", t0.Add(time.Second))
	must.Eq(t, nodeBefore+1, retries("unpublishing"))
	h.clock.AwaitTimer(t, t0.Add(time.Second))
	h.clock.Advance(time.Second)
	t1 := h.clock.Now()
	mustCheckpoint(t, h, "a1", unpublishing, "node detach of a1: attempt 2 refused", t1.Add(2*time.Second))
	must.Eq(t, nodeBefore+2, retries("unpublishing"))
	h.clock.AwaitTimer(t, t1.Add(2*time.Second))
	h.clock.Advance(2 * time.Second)
	t2 := h.clock.Now()
	mustCheckpoint(t, h, "a1", nodeDetached, "", time.Time{})
	mustCheckpoint(t, h, "a1", nodeDetached, "controller detach of a1: attempt 1 refused", t2.Add(time.Second))
	h.clock.AwaitTimer(t, t2.Add(time.Second))
	h.clock.Advance(time.Second)
	mustCheckpoint(t, h, "a1", controllerDetached, "", time.Time{})
	mustCheckpoint(t, h, "a1", freed, "", time.Time{})

	must.Eq(t, nodeBefore+2, retries("unpublishing"))
	must.Eq(t, controllerBefore+1, retries("node-detached"))
}
