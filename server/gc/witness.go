package gc

import "time"

// witness remembers when this leader saw the store reach an index.
type witness struct {
	marks []mark // oldest first
}

type mark struct {
	index uint64
	at    time.Time
}

// note records that the store had reached index at at, and forgets the
// marks no cutoff within keep of at needs.
func (w *witness) note(index uint64, at time.Time, keep time.Duration) {
	if n := len(w.marks); n > 0 && w.marks[n-1].index == index {
		// Nothing was written since: the older mark says more.
	} else {
		w.marks = append(w.marks, mark{index: index, at: at})
	}
	// Keep the newest mark at or before at-keep (the oldest cutoff's
	// answer) and those after it.
	oldest := at.Add(-keep)
	drop := 0
	for drop+1 < len(w.marks) && !w.marks[drop+1].at.After(oldest) {
		drop++
	}
	w.marks = w.marks[drop:]
}

// indexAt is the last index the store had reached at cutoff, as far as
// the marks say: every row changed at or below it is at least as old as
// cutoff. 0 when no mark is that old.
func (w *witness) indexAt(cutoff time.Time) uint64 {
	var index uint64
	for _, m := range w.marks {
		if m.at.After(cutoff) {
			break
		}
		index = m.index
	}
	return index
}
