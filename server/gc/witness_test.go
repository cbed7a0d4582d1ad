package gc

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestWitness_IndexAt: the index a cutoff maps to is the last one seen
// at or before it; marks no cutoff within keep needs are dropped.
func TestWitness_IndexAt(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	w := &witness{}
	w.note(10, t0, time.Hour)
	w.note(10, t0.Add(5*time.Minute), time.Hour) // nothing written since: the older mark stays
	w.note(20, t0.Add(10*time.Minute), time.Hour)

	must.EqOp(t, uint64(0), w.indexAt(t0.Add(-time.Second)), must.Sprint("no mark is that old"))
	must.EqOp(t, uint64(10), w.indexAt(t0.Add(9*time.Minute)))
	must.EqOp(t, uint64(20), w.indexAt(t0.Add(10*time.Minute)))
	must.EqOp(t, uint64(20), w.indexAt(t0.Add(time.Hour)))

	// At 70m with keep 1h, the oldest cutoff asked is 10m: the mark at 0
	// is no cutoff's answer any more.
	w.note(30, t0.Add(70*time.Minute), time.Hour)
	must.SliceLen(t, 2, w.marks)
	must.EqOp(t, uint64(20), w.indexAt(t0.Add(10*time.Minute)))
	must.EqOp(t, uint64(30), w.indexAt(t0.Add(70*time.Minute)))
}
