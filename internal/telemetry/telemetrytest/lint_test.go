package telemetrytest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"

	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
)

// A scrape with one badly named family of berth's, one of go-metrics'
// (its help text is its name) and one clean family.
const lintScrape = `# HELP berth_bad_requests Requests, wrongly named: a counter without _total.
# TYPE berth_bad_requests counter
berth_bad_requests 1
# HELP berth_raft_apply berth_raft_apply
# TYPE berth_raft_apply counter
berth_raft_apply 3
# HELP berth_good_requests_total Requests, well named.
# TYPE berth_good_requests_total counter
berth_good_requests_total 2
`

// Lint reports berth's own families apart from go-metrics' ones, with
// promtool on PATH where it is installed and without it (promlint alone):
// either way the lint runs, never skips.
func TestLint_SplitsOwnFromGoMetrics(t *testing.T) {
	check := func(t *testing.T) {
		own, goMetrics := telemetrytest.Lint(t, lintScrape)
		t.Logf("own %q, go-metrics %q", own, goMetrics)
		must.SliceContains(t, own, `berth_bad_requests counter metrics should have "_total" suffix`)
		for _, line := range own {
			must.StrHasPrefix(t, "berth_bad_requests ", line)
		}
		must.SliceNotEmpty(t, goMetrics)
		for _, line := range goMetrics {
			must.StrHasPrefix(t, "berth_raft_apply ", line)
		}
	}
	t.Run("path_as_is", check)
	t.Run("no_promtool", func(t *testing.T) {
		// The laptop's case, on purpose: CI's strictness does not apply.
		t.Setenv(testlog.StrictEnv, "")
		t.Setenv("PATH", t.TempDir())
		check(t)
	})
	t.Run("no_promtool_in_CI_fails", func(t *testing.T) {
		t.Setenv(testlog.StrictEnv, "1")
		t.Setenv("PATH", t.TempDir())
		msg := fatal(t, func(tb testing.TB) { telemetrytest.Lint(tb, lintScrape) })
		must.StrContains(t, msg, "promtool is not on PATH")
	})
}

// A clean scrape has nothing to report.
func TestLint_CleanScrape(t *testing.T) {
	own, goMetrics := telemetrytest.Lint(t, "# HELP berth_x_total X.\n# TYPE berth_x_total counter\nberth_x_total 1\n")
	must.SliceEmpty(t, own)
	must.SliceEmpty(t, goMetrics)
}

// fatalTB records the Fatalf that ends a helper and stops its goroutine
// there, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs fn with a fatalTB and returns what it failed with ("" if
// it did not).
func fatal(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

// A scrape that does not parse fails the test: a lint that read nothing
// must not pass.
func TestLint_FailsOnUnparsableScrape(t *testing.T) {
	msg := fatal(t, func(tb testing.TB) { telemetrytest.Lint(tb, "# TYPE berth_x counter\nberth_x{ 1\n") })
	must.StrContains(t, msg, "parse the scrape")
}

// Value reads a counter's or a gauge's one series, and fails the test for
// a collector with several.
func TestValue(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "X."})
	c.Add(3)
	must.EqOp(t, 3.0, telemetrytest.Value(t, c))
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "Y."})
	g.Set(-2.5)
	must.EqOp(t, -2.5, telemetrytest.Value(t, g))
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "z_total", Help: "Z."}, []string{"k"})
	v.WithLabelValues("a").Inc()
	must.EqOp(t, 1.0, telemetrytest.Counter(t, v, "a"))
	must.EqOp(t, 0.0, telemetrytest.Counter(t, v, "b"), must.Sprint("made, at 0"))

	msg := fatal(t, func(tb testing.TB) { telemetrytest.Value(tb, v) })
	must.StrContains(t, msg, "collected 2 metrics")
}

// A family is go-metrics' by its help text (its name), not by its name:
// given a help text of its own, the same family is berth's.
func TestLint_GoMetricsByHelpText(t *testing.T) {
	scrape := strings.Replace(lintScrape, "# HELP berth_raft_apply berth_raft_apply", "# HELP berth_raft_apply Raft applies.", 1)
	own, goMetrics := telemetrytest.Lint(t, scrape)
	must.SliceEmpty(t, goMetrics)
	must.SliceContains(t, own, `berth_raft_apply counter metrics should have "_total" suffix`)
}
