package chaos_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/chaos"
	"github.com/berth-csi/berth/internal/chaos/check"
)

var (
	rounds = flag.Int("rounds", 100, "chaos: fault rounds to run (each block of 5 runs every fault kind once)")
	seed   = flag.Uint64("seed", 0, "chaos: the seed of the faults and the workload; 0 draws one from the clock")
)

// skipUnlessChaos skips, saying why, unless the suite is asked for and
// can run here.
func skipUnlessChaos(t *testing.T) {
	t.Helper()
	if os.Getenv("BERTH_CHAOS") != "1" {
		t.Skip("the fault-injection suite runs only with BERTH_CHAOS=1 (for now, so that `make test` does not grow by minutes); run `make chaos`")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the plugin runs as a root task with bind mounts, and partitions are iptables rules")
	}
	if why := chaos.IptablesUsable(); why != "" {
		t.Skipf("needs iptables for the partitions: %s", why)
	}
}

// TestChaos_Short runs -rounds rounds of one fault each (every block of
// five runs each kind once, in a seeded order) on three server and two
// client processes while 2-4 goroutines register, read and deregister
// volumes at random servers. Then it asserts that the servers converge on
// one leader and one set of volumes, that no answer was a 5xx other than
// 503, that the history is linearizable (check.Linearizable; on failure
// porcupine's visualisation is written next to the logs) and that every
// server ends with every acknowledged write (check.Convergence).
func TestChaos_Short(t *testing.T) {
	skipUnlessChaos(t)
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos: seed %d, %d rounds (replay: make chaos SEED=%d ROUNDS=%d)", s, *rounds, s, *rounds)
	start := time.Now()

	c := chaos.StartCluster(t)
	t.Logf("chaos: cluster up in %s; logs in %s", time.Since(start).Round(time.Millisecond), c.LogDir)
	specs := chaos.PrepareVolumes(c, 6)
	workers := 2 + rand.New(rand.NewPCG(s, 1)).IntN(3)
	hist := chaos.NewHistory()
	wl := chaos.StartWorkload(c, specs, workers, s, hist)
	t.Logf("chaos: %d workers on %d volumes", workers, len(specs))
	nem := chaos.NewNemesis(t, c, s)
	summary := chaos.Summary{Seed: s, Convergence: -1}
	defer func() {
		// Checked here so that a run that fails early still says whether
		// what it saw was linearizable.
		wl.Stop()
		vizPath := filepath.Join(c.LogDir, "linearizability.html")
		lin, err := check.Linearizable(hist.Operations(), vizPath, 2*time.Minute)
		if err != nil {
			t.Errorf("chaos: %v", err)
		}
		summary.Linear = &lin
		summary.Rounds, summary.Faults, summary.Ops, summary.Duration = len(nem.Faults), nem.Faults, hist.Ops(), time.Since(start)
		t.Logf("chaos: summary\n%s", summary)
		if err := hist.WriteJSONLines(filepath.Join(c.LogDir, "history.jsonl")); err != nil {
			t.Errorf("chaos: write the history: %v", err)
		}
		switch {
		case lin.TimedOut:
			t.Errorf("chaos: the linearizability check timed out (seed %d): %s", s, lin)
		case !lin.OK:
			t.Errorf("chaos: the history is not linearizable (seed %d); see %s\n%s", s, vizPath, lin)
		}
	}()

	for r := 1; r <= *rounds; r++ {
		nem.Round(r)
	}
	wl.Stop()
	leader, ids := c.WaitConverged(60 * time.Second)
	t.Logf("chaos: converged on leader %s with volumes %v", leader.Name, ids)

	ops := hist.Ops()
	var bad []string
	for _, op := range chaos.ServerErrors(ops) {
		if op.Status != 503 {
			bad = append(bad, describe(op))
		}
	}
	must.SliceEmpty(t, bad, must.Sprintf("answers with a 5xx other than 503 (%d):\n%s", len(bad), strings.Join(bad, "\n")))

	finals := map[string]map[string]check.Value{}
	for _, srv := range c.Servers {
		vals, err := c.VolumeValues(srv)
		must.NoError(t, err, must.Sprintf("list the volumes of server %s", srv.Name))
		finals[srv.Name] = vals
	}
	violations := check.Convergence(finals, hist.Operations())
	summary.Convergence = len(violations)
	for _, v := range violations {
		t.Errorf("chaos: %s\n%s", v, opsOf(ops, v.VolumeID))
	}
}

// describe renders op with its times on the recorder's clock.
func describe(op chaos.Op) string {
	return fmt.Sprintf("  +%s..+%s w%d %s at %s: %s (status %d) %s", time.Duration(op.Call).Round(time.Millisecond),
		time.Duration(op.Return).Round(time.Millisecond), op.Client, op, op.Server, op.Outcome, op.Status, op.Err)
}

// opsOf is the writes of volume id (all of them when id is ""), described.
func opsOf(ops []chaos.Op, id string) string {
	var lines []string
	for _, op := range ops {
		if (id == "" || op.VolumeID == id) && op.Kind != check.KindRead {
			lines = append(lines, describe(op))
		}
	}
	return strings.Join(lines, "\n")
}
