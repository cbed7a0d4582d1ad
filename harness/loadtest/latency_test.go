package loadtest_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/harness/loadtest"
)

var (
	cycles        = flag.Int("cycles", 5, "latency: claim workflows to run (job run until running, job stop until freed)")
	pluginJobs    = flag.Int("plugin-jobs", 3, "latency: plugin jobs to run, each a mock driver of its own plugin ID")
	createRepeats = flag.Int("creates", 5, "latency: volume creates (and registers) to time")
	burst         = flag.Int("burst", 500, "latency: volumes created at 16 callers before the first list")
)

// TestLatency runs the claim workflow on three server processes and a
// client, the csi-test mock as a plugin task, every request through a
// follower (`make latency`; `make test` runs it with small counts), and
// prints the median and p90 of each gap of the timeline: between the
// caller's steps and the ones the servers and the client stamp on the
// allocation and its claim. It asserts no figure, only that every cycle
// worked and that its timeline holds every step.
func TestLatency(t *testing.T) {
	skipUnlessUsable(t)
	must.Positive(t, *cycles)
	must.Positive(t, *pluginJobs)
	must.Positive(t, *createRepeats)
	start := time.Now()
	c := loadtest.StartCluster(t, loadtest.Options{PluginTask: true})
	leader := c.WaitLeader(time.Minute)
	via := c.Follower(leader)
	t.Logf("latency: cluster up in %s; requests through follower %s; logs in %s", time.Since(start).Round(time.Millisecond), via.Name, c.LogDir)
	tab := &loadtest.Table{}

	var plugins loadtest.Latencies
	for i := range *pluginJobs {
		d, err := c.PluginJob(via, fmt.Sprintf("mock%d", i))
		must.NoError(t, err)
		plugins = append(plugins, d)
	}
	addQuantiles(tab, "plugin job sent -> plugin healthy (node and controller)", plugins)

	var creates, registers loadtest.Latencies
	for i := range *createRepeats {
		cr, reg, err := c.CreateAndRegister(via, "mock0", fmt.Sprintf("lat-cr-%d", i))
		must.NoError(t, err)
		creates, registers = append(creates, cr), append(registers, reg)
	}
	addQuantiles(tab, "volume create (the plugin makes it)", creates)
	addQuantiles(tab, "volume register (of a storage volume made)", registers)
	tab.Add("  create / register, medians", fmt.Sprintf("%.1f", float64(creates.Median())/float64(registers.Median())), "")

	// The writers' volume: each cycle claims it anew once the last
	// cycle's claim is freed.
	const vol = "lat-data"
	_, _, err := c.CreateAndRegister(via, "mock0", vol)
	must.NoError(t, err)
	gaps := map[[2]string]loadtest.Latencies{}
	var runs, stops loadtest.Latencies
	for i := range *cycles {
		cy, err := c.ClaimCycle(via, fmt.Sprintf("lat-writer-%d", i), vol)
		must.NoError(t, err, must.Sprintf("cycle %d", i))
		for _, steps := range [][]string{loadtest.RunSteps, loadtest.StopSteps} {
			for _, s := range steps {
				_, ok := cy[s]
				must.True(t, ok, must.Sprintf("cycle %d: step %q missing from the timeline %v", i, s, cy))
			}
			for k := 1; k < len(steps); k++ {
				d := cy.Gap(steps[k-1], steps[k])
				gaps[[2]string{steps[k-1], steps[k]}] = append(gaps[[2]string{steps[k-1], steps[k]}], d)
			}
		}
		run := cy.Gap(loadtest.StepSubmitted, loadtest.StepSeenRunning)
		stop := cy.Gap(loadtest.StepStopSubmitted, loadtest.StepSeenFreed)
		runs, stops = append(runs, run), append(stops, stop)
	}
	addQuantiles(tab, "job run -> alloc running with its claim", runs)
	for k := 1; k < len(loadtest.RunSteps); k++ {
		from, to := loadtest.RunSteps[k-1], loadtest.RunSteps[k]
		addQuantiles(tab, fmt.Sprintf("  %s -> %s", from, to), gaps[[2]string{from, to}])
	}
	addQuantiles(tab, "job stop -> claim freed (task exits on SIGTERM)", stops)
	for k := 1; k < len(loadtest.StopSteps); k++ {
		from, to := loadtest.StopSteps[k-1], loadtest.StopSteps[k]
		addQuantiles(tab, fmt.Sprintf("  %s -> %s", from, to), gaps[[2]string{from, to}])
	}
	// The first list after a burst of writes, against the median of the
	// lists after it, at the follower, to the last byte.
	took, err := c.CreateBurst(via, "mock0", *burst, 16)
	must.NoError(t, err)
	lists, err := c.WireLists(via, 1+*listReps)
	must.NoError(t, err)
	rest := lists[1:]
	tab.Add(fmt.Sprintf("first list of %d volumes after creating %d in %s", *burst+*createRepeats+1, *burst, took.Round(time.Millisecond)),
		loadtest.Millis(lists[0]), fmt.Sprintf("%.1f x the median of the %d lists after it, %s (max %s)",
			float64(lists[0])/float64(rest.Median()), len(rest), loadtest.Millis(rest.Median()), loadtest.Millis(rest.Max())))

	t.Logf("latency: figures (%s in all; %d answers retried; client steps by the client's clock, the others by the servers', one machine)\n%s",
		time.Since(start).Round(time.Millisecond), c.Retried.Load(), tab)
}

// addQuantiles adds the row of a figure measured len(l) times: its
// median, and its p90 and max.
func addQuantiles(tab *loadtest.Table, figure string, l loadtest.Latencies) {
	tab.Add(figure, loadtest.Millis(l.Median()),
		fmt.Sprintf("median of %d; p90 %s, max %s", len(l), loadtest.Millis(l.Quantile(0.9)), loadtest.Millis(l.Max())))
}

func TestLatencies_Quantile(t *testing.T) {
	var l loadtest.Latencies
	must.EqOp(t, 0, l.Quantile(0.9))
	for i := 10; i >= 1; i-- {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	must.EqOp(t, 9*time.Millisecond, l.Quantile(0.9), must.Sprint("p90 of 10 is the 9th"))
	must.EqOp(t, 10*time.Millisecond, l.Quantile(1))
	must.EqOp(t, time.Millisecond, l.Quantile(0))
	must.EqOp(t, 5500*time.Microsecond, l.Median())
}
