package command

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"
)

// TestBlockingReads_PausesWhenTheIndexDoesNotMove: each read blocks on
// the last answer's index; an answer whose index did not move (a server
// that answers at once, or a wait that timed out) is followed by a pause,
// one that moved is read on at once, and read's done ends it with its
// status.
func TestBlockingReads_PausesWhenTheIndexDoesNotMove(t *testing.T) {
	answers := []uint64{0, 5, 5, 5, 7, 6, 9}
	var asked []uint64
	var pausedAfter []int // how many reads had been made at each pause
	code := blockingReads(t.Context(), func(context.Context) { pausedAfter = append(pausedAfter, len(asked)) },
		func(index uint64) (uint64, int, bool) {
			asked = append(asked, index)
			if len(asked) == len(answers) {
				return 0, 3, true
			}
			return answers[len(asked)-1], 0, false
		})
	must.EqOp(t, 3, code)
	must.Eq(t, []uint64{0, 0, 5, 5, 5, 7, 6}, asked)
	// 0 after 0, 5 after 5 (twice), 6 after 7: the index did not move.
	must.Eq(t, []int{1, 3, 4, 6}, pausedAfter)
}
