package chaos

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
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
}

// String is the table: rounds, faults by kind, operations by kind and
// result, acknowledged operations and 5xx answers.
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
		k OpKind
		r Result
	}
	counts := map[key]int{}
	acked := 0
	for _, op := range s.Ops {
		counts[key{op.Kind, op.Result}]++
		if op.Result == ResultOK {
			acked++
		}
	}
	for _, k := range []OpKind{OpRegister, OpDeregister, OpRead} {
		fmt.Fprintf(w, "ops %s ok/fail/unknown\t%d/%d/%d\n", k, counts[key{k, ResultOK}], counts[key{k, ResultFail}], counts[key{k, ResultUnknown}])
	}
	fmt.Fprintf(w, "operations acknowledged\t%d of %d\n", acked, len(s.Ops))
	status := map[int]int{}
	for _, op := range ServerErrors(s.Ops) {
		status[op.Status]++
	}
	fmt.Fprintf(w, "5xx answers\t%d (500: %d, 503: %d)\n", len(ServerErrors(s.Ops)), status[500], status[503])
	_ = w.Flush()
	return b.String()
}
