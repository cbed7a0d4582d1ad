package telemetrytest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Counter is the value of v's series with labels (0, and made, if it has
// none yet).
func Counter(t testing.TB, v *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return Value(t, v.WithLabelValues(labels...))
}

// Value is the value of a counter or a gauge.
func Value(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("telemetrytest: read %s: %v", c.Desc(), err)
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// Samples is how many observations v's series with labels holds.
func Samples(t testing.TB, v *prometheus.HistogramVec, labels ...string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
		t.Fatalf("telemetrytest: read histogram %v: %v", labels, err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Scrape is what h (a registry's handler) serves to one GET.
func Scrape(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("telemetrytest: scrape answered %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// Lint runs `promtool check metrics` on scrape and splits its complaints
// (lines "family: problem") in two: own, about families with a help text
// of their own (berth's), and goMetrics, about those the go-metrics sinks
// make for raft, raft-boltdb, serf and memberlist, whose help text is
// their name (they are named by those libraries: camelCase, counters
// without _total). It skips the test, saying why, when promtool is not on
// PATH, and fails it when promtool cannot parse the scrape.
func Lint(t testing.TB, scrape string) (own, goMetrics []string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH: `make promtool` installs it (Debian's prometheus package)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &ee) && ee.ExitCode() == 3: // lint problems, listed
	default:
		t.Fatalf("telemetrytest: promtool check metrics: %v\n%s", err, out)
	}
	named := goMetricsFamilies(scrape)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		family, _, _ := strings.Cut(line, " ")
		if named[strings.TrimSuffix(family, ":")] {
			goMetrics = append(goMetrics, line)
		} else {
			own = append(own, line)
		}
	}
	return own, goMetrics
}

// goMetricsFamilies are the families of scrape whose help text is their
// name: the go-metrics sinks'.
func goMetricsFamilies(scrape string) map[string]bool {
	out := map[string]bool{}
	r := bufio.NewReader(strings.NewReader(scrape))
	for {
		line, err := r.ReadString('\n')
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, help, _ := strings.Cut(strings.TrimSpace(rest), " ")
			if name == help {
				out[name] = true
			}
		}
		if err == io.EOF {
			return out
		}
	}
}
