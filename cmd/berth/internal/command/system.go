package command

import (
	"context"
	"fmt"

	"github.com/berth-csi/berth/structs"
)

var systemGCCommand = &command{
	name:     "system gc",
	synopsis: "Collect garbage now",
	help: `[options]

  Have the leader collect garbage now, with every threshold at zero:
  allocations whose tasks are over (complete, failed or lost), unless
  they still hold a claim on a volume that is not freed; stopped jobs, and
  batch jobs that completed, with no allocation left; nodes that are down,
  run nothing and are named by no claim; freed past claims. It prints how
  many of each it removed. The leader also collects on its own every
  server { gc_interval }, keeping each kind for its threshold. It needs a
  management token when ACLs are on.

GC Options:

  -json
    Print the API's JSON.
`,
	run: runSystemGC,
}

func runSystemGC(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	resp, _, err := c.System().GarbageCollect()
	if err != nil {
		return m.fail("%s", apiError("collect garbage", err))
	}
	if *asJSON {
		return m.printValue(resp)
	}
	fmt.Fprintln(m.stdout, gcSummary(resp.Removed))
	return exitOK
}

// gcSummary says what a collection removed, in one line.
func gcSummary(r structs.GCResult) string {
	if r.Total() == 0 {
		return "Garbage collection removed nothing"
	}
	return fmt.Sprintf("Garbage collection removed %d %s, %d %s, %d %s and %d past %s",
		r.Allocs, pluralWord(r.Allocs, "allocation"), r.Jobs, pluralWord(r.Jobs, "job"),
		r.Nodes, pluralWord(r.Nodes, "node"), r.PastClaims, pluralWord(r.PastClaims, "claim"))
}
