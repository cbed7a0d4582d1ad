package telemetrytest

import (
	"bufio"
	"bytes"
	"errors"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Lint checks scrape as `promtool check metrics` does: always with
// promlint, the linter promtool runs, in this process; and with promtool
// itself too where it is on PATH (`make promtool` installs Debian's
// prometheus package), whose release may lint by other rules. It returns
// their problems (lines "family problem", as promtool prints them; each
// once, sorted) split in two: own, about families with a help text of
// their own (berth's), and goMetrics, about those the go-metrics sinks
// make for raft, raft-boltdb, serf and memberlist, whose help text is
// their name (they are named by those libraries: camelCase, counters
// without _total). It fails the test when the scrape does not parse.
func Lint(t testing.TB, scrape string) (own, goMetrics []string) {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation) // as promlint reads a text scrape
	byName, err := p.TextToMetricFamilies(strings.NewReader(scrape))
	if err != nil {
		t.Fatalf("telemetrytest: parse the scrape: %v", err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		families = append(families, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatalf("telemetrytest: promlint: %v", err)
	}
	lines := map[string]bool{}
	for _, pr := range problems {
		lines[pr.Metric+" "+pr.Text] = true
	}
	for _, line := range promtool(t, scrape) {
		lines[line] = true
	}

	for _, line := range slices.Sorted(maps.Keys(lines)) {
		family, _, _ := strings.Cut(line, " ")
		if mf := byName[strings.TrimSuffix(family, ":")]; mf != nil && mf.GetHelp() == mf.GetName() {
			goMetrics = append(goMetrics, line)
		} else {
			own = append(own, line)
		}
	}
	return own, goMetrics
}

// promtool is what `promtool check metrics` says of scrape, line by line;
// nothing where promtool is not on PATH. It fails the test when promtool
// cannot parse the scrape.
func promtool(t testing.TB, scrape string) []string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if testlog.Strict() {
			t.Fatalf("promtool is not on PATH (%s set; make promtool installs Debian's prometheus package): %v", testlog.StrictEnv, err)
		}
		return nil
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 3: // lint problems, listed
	default:
		t.Fatalf("telemetrytest: promtool check metrics: %v\n%s", err, out)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
