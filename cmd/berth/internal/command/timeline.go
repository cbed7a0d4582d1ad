package command

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/berth-csi/berth/structs"
)

// timelineStep is one step of a timeline as shown: its name, with what it
// belongs to when the table mixes an allocation's steps with its claims'.
type timelineStep struct {
	name string
	at   time.Time
}

// claimSteps names the steps of a claim on volume (for an allocation's
// timeline, which shows them among its own).
func claimSteps(volumeID string, t structs.Timeline) []timelineStep {
	out := make([]timelineStep, 0, len(t))
	for _, s := range t {
		out = append(out, timelineStep{name: s.Step + " (volume " + volumeID + ")", at: s.At})
	}
	return out
}

// ownSteps are the steps of t by their own names.
func ownSteps(t structs.Timeline) []timelineStep {
	out := make([]timelineStep, 0, len(t))
	for _, s := range t {
		out = append(out, timelineStep{name: s.Step, at: s.At})
	}
	return out
}

// timelineTable prints steps in time order, each with the gap since the
// step before and the time since the first. Client steps are stamped by
// the client's clock, the others by the servers': a clock skew between
// them shows as a gap that is off by as much.
func timelineTable(w io.Writer, steps []timelineStep) {
	slices.SortStableFunc(steps, func(a, b timelineStep) int { return a.at.Compare(b.at) })
	rows := make([][]string, 0, len(steps))
	for i, s := range steps {
		gap, total := "-", "-"
		if i > 0 {
			gap = "+" + millis(s.at.Sub(steps[i-1].at))
			total = millis(s.at.Sub(steps[0].at))
		}
		rows = append(rows, []string{s.name, s.at.Local().Format("15:04:05.000"), gap, total})
	}
	table(w, []string{"Step", "Time", "Gap", "Since First"}, rows)
}

// millis shows d in milliseconds with one decimal.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
