package chaos

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/berth-csi/berth/harness/chaos/check"
)

// ServerErrors is the operations answered with a 5xx status.
func ServerErrors(ops []Op) []Op {
	var out []Op
	for _, op := range ops {
		if op.Status >= 500 {
			out = append(out, op)
		}
	}
	return out
}

// Summary is the figures of a run, printed as a table at its end.
type Summary struct {
	Seed     uint64
	Rounds   int
	Duration time.Duration
	Faults   []Fault
	Ops      []Op
	Linear   *check.LinearResult // nil: not checked
	// Convergence is the violations check.Convergence found; -1 when it
	// did not run (the servers did not converge, or a server did not
	// answer).
	Convergence int

	JobOps                       []JobOp
	Retried                      int64 // answers the api client retried
	ClaimReads, ClaimReadsFailed int   // the sampler's reads of the job volumes
	// SingleWriter is the single-writer violations (samples and writer
	// files); -1 when not checked.
	SingleWriter int
	Writers      int // allocs that wrote to a writer volume
	WriterLines  int // lines they wrote
	Released     int // claims of ended allocs followed to their freeing
	// MaxFree is the longest time to free (check.TimeToFree); -1 when
	// not checked.
	MaxFree  time.Duration
	Slowest  check.ClaimRelease
	Leftover int // volume mounts left once every job stopped; -1 when not checked
}

var outcomes = []check.Outcome{check.OutcomeOK, check.OutcomeNotFound, check.OutcomeConflict, check.OutcomeRefused, check.OutcomeIndeterminate}

// String is the table: rounds, faults by kind, operations by kind and
// outcome, acknowledged operations, 5xx answers and the checkers'
// verdicts.
func (s Summary) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "seed\t%d\n", s.Seed)
	fmt.Fprintf(w, "rounds\t%d\n", s.Rounds)
	fmt.Fprintf(w, "duration\t%s\n", s.Duration.Round(time.Second))
	byKind := map[FaultKind]int{}
	var slowest time.Duration
	for _, f := range s.Faults {
		byKind[f.Kind]++
		slowest = max(slowest, f.Recovered.Sub(f.Healed))
	}
	for _, k := range FaultKinds {
		fmt.Fprintf(w, "faults %s\t%d\n", k, byKind[k])
	}
	fmt.Fprintf(w, "slowest recovery after a fault was undone\t%s\n", slowest.Round(time.Millisecond))
	type key struct {
		k check.Kind
		o check.Outcome
	}
	counts := map[key]int{}
	acked := 0
	for _, op := range s.Ops {
		counts[key{op.Kind, op.Outcome}]++
		if op.Outcome == check.OutcomeOK {
			acked++
		}
	}
	names := make([]string, len(outcomes))
	for i, o := range outcomes {
		names[i] = o.String()
	}
	for _, k := range []check.Kind{check.KindRegister, check.KindDeregister, check.KindRead} {
		n := make([]string, len(outcomes))
		for i, o := range outcomes {
			n[i] = fmt.Sprint(counts[key{k, o}])
		}
		fmt.Fprintf(w, "ops %s %s\t%s\n", k, strings.Join(names, "/"), strings.Join(n, "/"))
	}
	fmt.Fprintf(w, "operations acknowledged\t%d of %d\n", acked, len(s.Ops))
	jobErrs, fivexx := 0, 0
	status := map[int]int{} // the 5xx answers by status, volume and job operations both
	for _, op := range s.JobOps {
		if op.Err != "" {
			jobErrs++
		}
		if op.Status >= 500 {
			status[op.Status]++
			fivexx++
		}
	}
	for _, op := range ServerErrors(s.Ops) {
		status[op.Status]++
		fivexx++
	}
	fmt.Fprintf(w, "job runs and stops (errors)\t%d (%d)\n", len(s.JobOps), jobErrs)
	fmt.Fprintf(w, "5xx answers\t%d (500: %d, 503: %d)\n", fivexx, status[500], status[503])
	fmt.Fprintf(w, "answers retried by the api client\t%d\n", s.Retried)
	fmt.Fprintf(w, "claim reads (no answer)\t%d (%d)\n", s.ClaimReads, s.ClaimReadsFailed)
	fmt.Fprintf(w, "writers, lines written\t%d, %d\n", s.Writers, s.WriterLines)
	fmt.Fprintf(w, "double writers\t%s\n", orNotChecked(s.SingleWriter))
	if s.MaxFree < 0 {
		fmt.Fprintf(w, "max time to free\tnot checked\n")
	} else {
		fmt.Fprintf(w, "max time to free (claims released)\t%s (%d; slowest: alloc %s on %s)\n", s.MaxFree.Round(time.Millisecond), s.Released, s.Slowest.AllocID, s.Slowest.VolumeID)
	}
	fmt.Fprintf(w, "leftover mounts\t%s\n", orNotChecked(s.Leftover))
	switch l := s.Linear; {
	case l == nil:
		fmt.Fprintf(w, "linearizable\tnot checked\n")
	default:
		verdict := "yes"
		if l.TimedOut {
			verdict = "unknown (timed out)"
		} else if !l.OK {
			verdict = "no"
		}
		fmt.Fprintf(w, "linearizable\t%s\n", verdict)
		fmt.Fprintf(w, "linearizability checked/indeterminate/dropped ops, volumes\t%d/%d/%d, %d\n", l.Checked, l.Indeterminate, l.Dropped, l.Volumes)
	}
	fmt.Fprintf(w, "convergence violations\t%s\n", orNotChecked(s.Convergence))
	_ = w.Flush()
	return b.String()
}

// orNotChecked renders a count, "not checked" when negative.
func orNotChecked(n int) string {
	if n < 0 {
		return "not checked"
	}
	return fmt.Sprint(n)
}
