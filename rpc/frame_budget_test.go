package rpc

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// TestFrameBudget_Reserve: large requests share what the budget leaves
// above its small-request room; small ones may use all of it; a request
// that finds no room waits, gets it when some is given back, or fails
// naming its size and the budget when its wait passes; a release counts
// once.
func TestFrameBudget_Reserve(t *testing.T) {
	const limit = minFrameBudget // 32 MiB: large ones may hold 28 MiB
	ctx := context.Background()
	b := newFrameBudget(limit)

	big, err := b.reserve(ctx, MaxFrameSize, time.Millisecond)
	must.NoError(t, err)

	// A second large one does not fit beside it (16 + 16 > 28).
	_, err = b.reserve(ctx, MaxFrameSize, 20*time.Millisecond)
	must.ErrorIs(t, err, errFrameBudget)
	must.StrContains(t, err.Error(), "a request of 16777216 bytes found no room within 20ms: 16777216 of 33554432 bytes held")

	// Small ones fill the rest, past the large ones' share.
	var small []func()
	for b.heldNow()+smallFrameLen <= limit {
		release, err := b.reserve(ctx, smallFrameLen, time.Millisecond)
		must.NoError(t, err)
		small = append(small, release)
	}
	must.Eq(t, int64(limit), b.heldNow())
	_, err = b.reserve(ctx, 1, time.Millisecond)
	must.ErrorIs(t, err, errFrameBudget, must.Sprint("even a small one waits when all is held"))
	for _, release := range small {
		release()
		release() // counts once
	}
	must.Eq(t, int64(MaxFrameSize), b.heldNow())

	// A waiting request gets in when room is given back.
	got := make(chan error, 1)
	go func() {
		release, err := b.reserve(ctx, MaxFrameSize, time.Minute)
		if err == nil {
			release()
		}
		got <- err
	}()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return b.waiting.Load() == 1 }),
		wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
	big()
	must.NoError(t, <-got)
	must.Eq(t, 0, b.heldNow())
	must.Eq(t, int64(limit), b.peakHeld())

	// A wait ends with its context.
	hold, err := b.reserve(ctx, MaxFrameSize, time.Millisecond)
	must.NoError(t, err)
	defer hold()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.reserve(cctx, MaxFrameSize, time.Minute)
	must.ErrorIs(t, err, context.Canceled)
	must.StrContains(t, err.Error(), "waiting for room for a request of 16777216 bytes")
}

// TestFrameBudget_NoLimit: a budget of 0 never waits nor counts.
func TestFrameBudget_NoLimit(t *testing.T) {
	b := newFrameBudget(0)
	for range 100 {
		_, err := b.reserve(context.Background(), MaxFrameSize, time.Nanosecond)
		must.NoError(t, err)
	}
	must.Eq(t, 0, b.heldNow())
}

// TestFrameBudget_Defaults: 256 MiB, a quarter of GOMEMLIMIT when lower,
// never under two MaxFrameSize requests; WithFrameBudget removes or raises
// it.
func TestFrameBudget_Defaults(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })

	debug.SetMemoryLimit(math.MaxInt64)
	must.Eq(t, 256<<20, DefaultFrameBudget())
	must.Eq(t, 256<<20, NewServer(nil).budget.limit)
	debug.SetMemoryLimit(400 << 20)
	must.Eq(t, 100<<20, DefaultFrameBudget())
	debug.SetMemoryLimit(64 << 20)
	must.Eq(t, minFrameBudget, DefaultFrameBudget())
	debug.SetMemoryLimit(math.MaxInt64)

	must.Eq(t, 0, NewServer(nil, WithFrameBudget(0)).budget.limit)
	must.Eq(t, 0, NewServer(nil, WithFrameBudget(-1)).budget.limit)
	must.Eq(t, minFrameBudget, NewServer(nil, WithFrameBudget(1<<20)).budget.limit)
	must.Eq(t, 1<<30, NewServer(nil, WithFrameBudget(1<<30)).budget.limit)
	must.Eq(t, DefaultFrameStallTimeout, NewServer(nil).stallTimeout)
	must.Eq(t, time.Second, NewServer(nil, WithFrameStallTimeout(time.Second)).stallTimeout)
	must.Eq(t, DefaultFrameStallTimeout, NewServer(nil, WithFrameStallTimeout(0)).stallTimeout)
}

// heldNow is the bytes b holds now.
func (b *frameBudget) heldNow() int64 {
	held, _ := b.usage()
	return held
}
