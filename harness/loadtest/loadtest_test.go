package loadtest_test

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/harness/loadtest"
	"github.com/berth-csi/berth/internal/testlog"
)

// The defaults are small, for `make test` (a couple of seconds per
// figure); `make loadtest` passes the full ones (LOADTEST_ARGS in the
// GNUmakefile).
var (
	volumes     = ints("volumes", "200,1000", "volume counts to fill the store to, ascending: lists and leader RSS are measured at each, registers again at the last")
	registers   = ints("registers", "1,16", "concurrent callers of each register run")
	claims      = ints("claims", "1,16,256", "concurrent callers of each claim run")
	kills       = flag.Int("kills", 3, "loadtest: kill -9 trials of the leader")
	duration    = flag.Duration("duration", 2*time.Second, "loadtest: how long each register and claim run lasts")
	poolSize    = flag.Int("pool", 5000, "loadtest: storage volumes made in the mock for each register run (a run that uses them all ends early, and says so)")
	fillCallers = flag.Int("fill-callers", 32, "loadtest: concurrent callers that fill the store")
	claimAllocs = flag.Int("claim-allocs", 4, "loadtest: running allocations whose claims the claim runs renew, one volume each")
	listReps    = flag.Int("list-reps", 5, "loadtest: lists per figure (the median is shown)")
	profiles    = flag.Bool("profiles", false, "loadtest: save the leader's CPU profile of each register and claim run in the log dir")
	noCeiling   = flag.Bool("no-ceiling", false, "loadtest: do not measure the raft + memdb ceiling")
)

// intList is a flag of comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out intList
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func ints(name, def, usage string) *intList {
	l := &intList{}
	if err := l.Set(def); err != nil {
		panic(err)
	}
	flag.Var(l, name, "loadtest: "+usage)
	return l
}

// skipUnlessUsable skips, saying why, where the load tool cannot run.
func skipUnlessUsable(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the load tool builds berth, starts four agents and the mock CSI driver, and runs for about a minute")
	}
	testlog.NeedRoot(t, "the client runs the claiming allocations' tasks with the exec driver")
}

// TestLoad starts three servers and a client with the mock driver and
// prints one table of throughput and latency figures (`make loadtest`;
// `make test` runs it with small counts). It asserts no figure, only that
// every step worked: no request failed (beyond the 503s the api client
// retries), every list held every volume, the servers elected a new
// leader after each kill and converged on the same volumes at the end.
func TestLoad(t *testing.T) {
	skipUnlessUsable(t)
	vols := []int(*volumes)
	ascending := slices.IsSorted(vols) && len(slices.Compact(slices.Clone(vols))) == len(vols)
	must.True(t, ascending && vols[0] > *claimAllocs && *claimAllocs > 0,
		must.Sprintf("-volumes %v must ascend strictly, each above -claim-allocs %d (> 0)", vols, *claimAllocs))
	start := time.Now()
	c := loadtest.StartCluster(t, loadtest.Options{AttachLimit: *claimAllocs + 8})
	t.Logf("loadtest: cluster up in %s; logs in %s", time.Since(start).Round(time.Millisecond), c.LogDir)
	tab := &loadtest.Table{}
	leader := c.WaitLeader(time.Minute)

	targets, err := c.SetupClaims(leader, *claimAllocs)
	must.NoError(t, err)
	// The registers' pool first: the mock looks volumes up by a linear
	// scan, so these stay cheap to find at every store size.
	pool, err := c.MakePool(t.Context(), *poolSize)
	must.NoError(t, err)
	fill, err := c.MakePool(t.Context(), vols[len(vols)-1]-*claimAllocs)
	must.NoError(t, err)
	t.Logf("loadtest: %d claiming allocations running; %d storage volumes made in the mock (+%s)",
		len(targets), *poolSize+fill.Len(), time.Since(start).Round(time.Millisecond))

	ceiling := measureCeiling(t, tab)
	empty := map[int]float64{}
	for _, n := range *registers {
		empty[n] = registerRun(t, c, tab, leader, n, pool, "empty", "register/s over HTTP at the leader, empty store, %s")
		tab.AddRatio(empty[n], ceiling[n], n)
	}
	for _, n := range *claims {
		stop := cpuProfile(t, c, leader, fmt.Sprintf("cpu-claim-%d.pb.gz", n))
		r, err := c.ClaimRun(leader, n, *duration, targets)
		stop()
		must.NoError(t, err)
		tab.AddRate(fmt.Sprintf("claims/s over HTTP at the leader, %s (renewing %d running allocs' claims, a volume each)", callersText(n), len(targets)), r)
		tab.AddRatio(r.PerSecond(), ceiling[n], n)
	}

	stored := *claimAllocs
	rss, err := loadtest.RSS(leader)
	must.NoError(t, err)
	for _, n := range vols {
		r, err := c.Fill(leader, n-stored, *fillCallers, fill)
		must.NoError(t, err)
		c.WaitVolumeCount(n, 2*time.Minute)
		t.Logf("loadtest: filled to %d volumes: %d in %s (%.0f/s at %d callers)", n, r.Ops, r.Elapsed.Round(time.Millisecond), r.PerSecond(), r.Callers)
		// Before the lists: a list of every volume leaves garbage the
		// size of its answer, which the RSS would count until the
		// runtime hands it back.
		after, err := loadtest.RSS(leader)
		must.NoError(t, err)
		heap, err := c.SaveProfile(leader, "heap", "gc=1", fmt.Sprintf("heap-%d.pb.gz", n))
		must.NoError(t, err)
		t.Logf("loadtest: the leader's heap at %d volumes: %s", n, heap)
		follower := c.Follower(leader)
		for _, via := range []struct {
			name  string
			at    *loadtest.Agent
			stale bool
		}{{"the leader", leader, false}, {"a follower", follower, false}, {"a follower, ?stale", follower, true}} {
			dec, wire, err := c.ListLatency(via.at, via.stale, *listReps, n)
			must.NoError(t, err)
			tab.Add(fmt.Sprintf("list %d volumes over HTTP via %s", n, via.name), loadtest.Millis(dec.Median()),
				fmt.Sprintf("api List, median of %d (max %s); %s to the last byte, undecoded", len(dec), loadtest.Millis(dec.Max()), loadtest.Millis(wire.Median())))
		}
		per := func(a, b int64) string { return loadtest.Bytes(float64(b-a) / float64(n-stored)) }
		how := fmt.Sprintf("VmRSS %s -> %s, after the fill; of it anonymous (heap) %s/volume, mapped files (bolt) %s/volume",
			loadtest.Bytes(float64(rss.RSS)), loadtest.Bytes(float64(after.RSS)), per(rss.Anon, after.Anon), per(rss.File, after.File))
		if n < 5000 {
			how += "; under 5,000 volumes the GC's swings outweigh the rows"
		}
		tab.Add(fmt.Sprintf("leader RSS per volume, %d -> %d volumes", stored, n), per(rss.RSS, after.RSS), how)
		stored, rss = n, after
	}
	for _, n := range *registers {
		got := registerRun(t, c, tab, leader, n, pool, strconv.Itoa(stored), fmt.Sprintf("register/s with %d volumes stored, %%s", stored))
		tab.Add(fmt.Sprintf("  ratio to the empty store, %s", callersText(n)), fmt.Sprintf("%.2f", got/empty[n]), "")
	}

	var elections loadtest.Latencies
	var trials []string
	for i := range *kills {
		took, killed, next, err := c.KillLeader(2 * time.Minute)
		must.NoError(t, err, must.Sprintf("kill %d", i+1))
		elections = append(elections, took)
		trials = append(trials, loadtest.Seconds(took))
		t.Logf("loadtest: kill %d: leader %s killed; %s leads after %s", i+1, killed.Name, next.Name, took.Round(time.Millisecond))
	}
	if len(elections) > 0 {
		tab.Add(fmt.Sprintf("new leader after kill -9 of the leader, median of %d", len(elections)), loadtest.Seconds(elections.Median()), strings.Join(trials, " "))
		tab.Add(fmt.Sprintf("new leader after kill -9 of the leader, max of %d", len(elections)), loadtest.Seconds(elections.Max()), "")
	}
	c.WaitVolumeCount(stored, 2*time.Minute)
	t.Logf("loadtest: figures (%s in all; %d answers retried)\n%s", time.Since(start).Round(time.Millisecond), c.Retried.Load(), tab)
}

// measureCeiling measures the raft + memdb ceiling (loadtest.Ceiling) at
// every caller count of the register and claim runs, adds its rows, and
// shuts its raft nodes down.
func measureCeiling(t *testing.T, tab *loadtest.Table) map[int]float64 {
	t.Helper()
	out := map[int]float64{}
	if *noCeiling {
		return out
	}
	ceil := loadtest.StartCeiling(t)
	defer ceil.Close()
	for _, n := range slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(*registers), *claims...)))) {
		r, err := ceil.Run(n, *duration)
		must.NoError(t, err)
		out[n] = r.PerSecond()
		tab.AddRate(fmt.Sprintf("raft + memdb ceiling, %s: entries/s, one per operation", callersText(n)), r)
	}
	return out
}

// registerRun measures register/s at the leader with callers callers,
// adds the row (figure is a format taking callersText), deregisters what
// it registered so that the store is as it was, and returns the rate.
// tag names the run's CPU profile (-profiles).
func registerRun(t *testing.T, c *loadtest.Cluster, tab *loadtest.Table, leader *loadtest.Agent, callers int, pool *loadtest.Pool, tag, figure string) float64 {
	t.Helper()
	stop := cpuProfile(t, c, leader, fmt.Sprintf("cpu-register-%d-at-%s.pb.gz", callers, tag))
	r, reg, err := c.RegisterRun(leader, callers, *duration, pool)
	stop()
	must.NoError(t, err)
	tab.AddRate(fmt.Sprintf(figure, callersText(callers)), r)
	must.NoError(t, c.Deregister(leader, reg, pool))
	return r.PerSecond()
}

// cpuProfile starts a CPU profile of the leader over the next run, when
// -profiles is given, and returns what waits for it to be saved.
func cpuProfile(t *testing.T, c *loadtest.Cluster, leader *loadtest.Agent, file string) func() {
	if !*profiles {
		return func() {}
	}
	return c.CPUProfile(t, leader, *duration, file)
}

// callersText is "1 caller" or "n callers".
func callersText(n int) string {
	if n == 1 {
		return "1 caller"
	}
	return fmt.Sprintf("%d callers", n)
}
