package loadtest

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Table is the figures of a run, one row each: what was measured, the
// figure, and how it was come by.
type Table struct {
	rows [][3]string
}

// Add appends a row.
func (t *Table) Add(figure, value, detail string) {
	t.rows = append(t.rows, [3]string{figure, value, detail})
}

// AddRate appends the row of a throughput run.
func (t *Table) AddRate(figure string, r Throughput) {
	detail := fmt.Sprintf("%d in %s", r.Ops, r.Elapsed.Round(time.Millisecond))
	if r.RanOut {
		detail += " (the pool of storage volumes ran out: raise -pool)"
	}
	t.Add(figure, fmt.Sprintf("%.0f/s", r.PerSecond()), detail)
}

// AddRatio appends the row of a throughput's ratio to the raft + memdb
// ceiling measured at the same callers in the same run.
func (t *Table) AddRatio(rate, ceiling float64, callers int) {
	if ceiling <= 0 {
		return
	}
	t.Add("  ratio to the raft + memdb ceiling", fmt.Sprintf("%.2f", rate/ceiling),
		fmt.Sprintf("ceiling %.0f entries/s at %d concurrent appliers, one entry each (Ceiling)", ceiling, callers))
}

// String renders the table in aligned columns.
func (t *Table) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tvalue\thow")
	fmt.Fprintln(w, "------\t-----\t---")
	for _, r := range t.rows {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r[0], r[1], r[2])
	}
	_ = w.Flush()
	return b.String()
}

// Millis renders d in milliseconds.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// Seconds renders d in seconds.
func Seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// Bytes renders n bytes in KB or MB (1024-based).
func Bytes(n float64) string {
	if n >= 1<<20 || n <= -(1<<20) {
		return fmt.Sprintf("%.1f MB", n/(1<<20))
	}
	return fmt.Sprintf("%.2f KB", n/(1<<10))
}
