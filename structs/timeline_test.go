package structs

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestTimeline_StampOnceNeverInPlace(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	base := make(Timeline, 0, 8) // room to grow in place, which Stamp must not use
	base = base.Stamp(StepPlaced, t0)
	a := base.Stamp(StepReceived, t0.Add(time.Millisecond))
	b := base.Stamp(StepStopRequested, t0.Add(2*time.Millisecond))
	must.Eq(t, Timeline{{StepPlaced, t0}, {StepReceived, t0.Add(time.Millisecond)}}, a)
	must.Eq(t, Timeline{{StepPlaced, t0}, {StepStopRequested, t0.Add(2 * time.Millisecond)}}, b)
	must.Eq(t, a, a.Stamp(StepReceived, t0.Add(time.Hour)), must.Sprint("the first stamp stays"))
	must.Eq(t, a, a.Stamp(StepFreed, time.Time{}), must.Sprint("an unset time stamps nothing"))
	must.Eq(t, a, a.Stamp(StepFreed, time.Unix(0, 0)), must.Sprint("an entry without a time stamps nothing"))

	in := Timeline{{StepPlaced, t0.Add(time.Hour)}, {StepSignalSent, t0.Add(3 * time.Millisecond)}, {StepFreed, t0}}
	got := a.Merge(in, ClientStep)
	must.Eq(t, Timeline{{StepPlaced, t0}, {StepReceived, t0.Add(time.Millisecond)}, {StepSignalSent, t0.Add(3 * time.Millisecond)}}, got)
	must.Eq(t, Timeline{{StepFreed, t0}, {StepSignalSent, t0.Add(3 * time.Millisecond)}, {StepPlaced, t0.Add(time.Hour)}}, in.Sorted())
	must.EqOp(t, StepNodeUnpublished, ClaimStep(CSIVolumeClaimStateNodeDetached))
	must.EqOp(t, "", ClaimStep(CSIVolumeClaimState(9)))
}
