package volumewatcher_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/server/volumewatcher"
	"github.com/berth-csi/berth/structs"
)

// exact is the claim backoff without jitter, so delays can be asserted.
func exact() backoff.Policy {
	p := volumewatcher.ClaimBackoff()
	p.Jitter = 0
	return p
}

var (
	unpublishing       = structs.CSIVolumeClaimStateUnpublishing
	nodeDetached       = structs.CSIVolumeClaimStateNodeDetached
	controllerDetached = structs.CSIVolumeClaimStateControllerDetached
	freed              = structs.CSIVolumeClaimStateFreed
)

// mustCheckpoint asserts the watcher's next checkpoint.
func mustCheckpoint(t *testing.T, h *harness, allocID string, state structs.CSIVolumeClaimState, lastErr string, nextAt time.Time) {
	t.Helper()
	cp := h.next(t)
	must.Eq(t, allocID, cp.AllocationID)
	must.Eq(t, state, cp.State)
	must.Eq(t, lastErr, cp.LastError)
	must.True(t, nextAt.Equal(cp.NextAttemptAt), must.Sprintf("next attempt at %s, want %s", cp.NextAttemptAt, nextAt))
	must.True(t, h.clock.Now().Equal(cp.Timestamp), must.Sprint("the checkpoint is stamped by the clock"))
}

func TestWatcher_Run_ReleasesClaimToFreed(t *testing.T) {
	h := newHarness(t, exact())
	h.releasing(t, "v1", "a1")
	h.run(t)

	for _, state := range []structs.CSIVolumeClaimState{nodeDetached, controllerDetached, freed} {
		mustCheckpoint(t, h, "a1", state, "", time.Time{})
	}
	must.Nil(t, h.claim(t, "v1", "a1"))
	h.mu.Lock()
	must.Eq(t, []string{"node/a1@v1/unpublishing", "controller/a1@v1/node-detached"}, h.seen)
	h.mu.Unlock()
	iter, err := h.store.CSIVolumesReleasing(nil)
	must.NoError(t, err)
	must.Nil(t, iter.Next())
}

func TestWatcher_Run_FailedStepWaitsOutItsBackoff(t *testing.T) {
	h := newHarness(t, exact())
	h.fail["node/a1"], h.fail["controller/a1"] = 2, 1
	h.releasing(t, "v1", "a1")
	t0 := h.clock.Now()
	h.run(t)

	// The first failure: LastError, Attempts 1, and a retry 1s on.
	mustCheckpoint(t, h, "a1", unpublishing, "node detach of a1: attempt 1 refused", t0.Add(time.Second))
	c := h.claim(t, "v1", "a1")
	must.Eq(t, 1, c.Attempts)
	must.Eq(t, "node detach of a1: attempt 1 refused", c.LastError)
	h.clock.AwaitTimer(t, t0.Add(time.Second))

	// Looking again just before it is due does not retry.
	h.clock.Advance(time.Second - time.Millisecond)
	h.w.Kick()
	h.clock.AwaitTimer(t, t0.Add(time.Second))
	must.Eq(t, 1, h.Calls("node/a1"))

	// Due: the second failure doubles the wait.
	h.clock.Advance(time.Millisecond)
	t1 := h.clock.Now()
	mustCheckpoint(t, h, "a1", unpublishing, "node detach of a1: attempt 2 refused", t1.Add(2*time.Second))
	must.Eq(t, 2, h.claim(t, "v1", "a1").Attempts)
	h.clock.AwaitTimer(t, t1.Add(2*time.Second))

	// The node step succeeds; the controller step's first failure waits 1s
	// again: attempts count per state.
	h.clock.Advance(2 * time.Second)
	t2 := h.clock.Now()
	mustCheckpoint(t, h, "a1", nodeDetached, "", time.Time{})
	mustCheckpoint(t, h, "a1", nodeDetached, "controller detach of a1: attempt 1 refused", t2.Add(time.Second))
	must.Eq(t, 1, h.claim(t, "v1", "a1").Attempts)
	h.clock.AwaitTimer(t, t2.Add(time.Second))

	h.clock.Advance(time.Second)
	mustCheckpoint(t, h, "a1", controllerDetached, "", time.Time{})
	mustCheckpoint(t, h, "a1", freed, "", time.Time{})
	must.Nil(t, h.claim(t, "v1", "a1"))
	must.Eq(t, 3, h.Calls("node/a1"))
	must.Eq(t, 2, h.Calls("controller/a1"))
}

// TestWatcher_Run_FailedCheckpointWaitsItsBackoff: a step whose
// checkpoint raft refuses is made again only after the backoff, not at
// once in a loop of detach calls.
func TestWatcher_Run_FailedCheckpointWaitsItsBackoff(t *testing.T) {
	h := newHarness(t, exact())
	h.mu.Lock()
	h.unavailable = 1
	h.mu.Unlock()
	h.releasing(t, "v1", "a1")
	t0 := h.clock.Now()
	h.run(t)

	h.clock.AwaitTimer(t, t0.Add(time.Second)) // the step ran, its checkpoint failed: wait 1s
	must.Eq(t, 1, h.Calls("node/a1"))
	h.w.Kick()
	h.clock.AwaitTimer(t, t0.Add(time.Second))
	must.Eq(t, 1, h.Calls("node/a1"), must.Sprint("not made again before its backoff"))

	h.clock.Advance(time.Second)
	mustCheckpoint(t, h, "a1", nodeDetached, "", time.Time{})
	must.Eq(t, 2, h.Calls("node/a1"))
}

func TestWatcher_Run_JitterOnlyShortensTheBackoff(t *testing.T) {
	h := newHarness(t, volumewatcher.ClaimBackoff())
	h.fail["node/a1"] = 1
	h.releasing(t, "v1", "a1")
	t0 := h.clock.Now()
	h.run(t)

	cp := h.next(t)
	must.Eq(t, unpublishing, cp.State)
	wait := cp.NextAttemptAt.Sub(t0)
	must.GreaterEq(t, 800*time.Millisecond, wait)
	must.LessEq(t, time.Second, wait)
	h.clock.AwaitTimer(t, cp.NextAttemptAt)
	h.clock.Advance(wait)
	for _, state := range []structs.CSIVolumeClaimState{nodeDetached, controllerDetached, freed} {
		mustCheckpoint(t, h, "a1", state, "", time.Time{})
	}
}

func TestWatcher_Run_ClaimsProgressIndependently(t *testing.T) {
	h := newHarness(t, exact())
	release := make(chan struct{})
	h.block["node/a1"] = release
	h.releasing(t, "v1", "a1")
	h.releasing(t, "v2", "a2")
	h.run(t)

	// a2 is freed while a1's node step hangs. The looks that started a2's
	// later steps saw a1 due too, and did not start its step again.
	for _, state := range []structs.CSIVolumeClaimState{nodeDetached, controllerDetached, freed} {
		mustCheckpoint(t, h, "a2", state, "", time.Time{})
	}
	must.Eq(t, "node/a1", h.nextStarted(t))
	c := h.claim(t, "v1", "a1")
	must.Eq(t, unpublishing, c.State)
	must.Eq(t, 1, h.Calls("node/a1"))

	close(release)
	for _, state := range []structs.CSIVolumeClaimState{nodeDetached, controllerDetached, freed} {
		mustCheckpoint(t, h, "a1", state, "", time.Time{})
	}
	must.Eq(t, 1, h.Calls("node/a1"))
}

func TestWatcher_Run_WaitsForStepsWhenContextEnds(t *testing.T) {
	h := newHarness(t, exact())
	release := make(chan struct{})
	h.block["node/a1"] = release
	h.releasing(t, "v1", "a1")
	h.run(t)

	must.Eq(t, "node/a1", h.nextStarted(t))
	h.cancel()
	select {
	case <-h.done:
		t.Fatal("Run returned with a step in flight")
	default:
	}
	close(release)
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once its step did")
	}

	// The step saw its term end and was not checkpointed: the next leader
	// makes it again.
	h.mu.Lock()
	must.ErrorIs(t, h.lastCtx["node/a1"], context.Canceled)
	h.mu.Unlock()
	must.Eq(t, 0, len(h.applied))
	c := h.claim(t, "v1", "a1")
	must.Eq(t, unpublishing, c.State)
	must.Eq(t, 0, c.Attempts)
}

func TestNew_RejectsIncompleteConfig(t *testing.T) {
	_, err := volumewatcher.New(volumewatcher.Config{})
	must.ErrorIs(t, err, volumewatcher.ErrInvalidConfig)

	cfg := volumewatcher.DefaultConfig()
	_, err = volumewatcher.New(cfg)
	must.ErrorIs(t, err, volumewatcher.ErrInvalidConfig, must.Sprint("no Deps"))
	cfg.Deps = &fakeDeps{}
	w, err := volumewatcher.New(cfg)
	must.NoError(t, err)
	must.NotNil(t, w)
}
