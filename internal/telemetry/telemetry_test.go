package telemetry_test

import (
	"errors"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	armon "github.com/armon/go-metrics"
	hashimetrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
)

// TestNew_ScrapesWhatLibrariesEmit: what raft, serf and memberlist emit
// (hashicorp/go-metrics) and what raft-boltdb emits (armon/go-metrics,
// through the compat package) are both in the scrape, under the
// service's prefix, next to the Go runtime's families and berth's own.
func TestNew_ScrapesWhatLibrariesEmit(t *testing.T) {
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	hashimetrics.IncrCounter([]string{"raft", "apply"}, 3)
	armon.SetGauge([]string{"raft", "boltdb", "test_gauge"}, 7)
	telemetry.NodeHeartbeatMisses.Add(0) // registered: in the scrape even at 0

	body := telemetrytest.Scrape(t, tel.Handler())
	must.StrContains(t, body, "berth_raft_apply 3\n")
	must.StrContains(t, body, "berth_raft_boltdb_test_gauge 7\n")
	must.StrContains(t, body, "# TYPE go_goroutines gauge")
	must.StrContains(t, body, "# TYPE berth_node_heartbeat_misses_total counter")
}

// TestNew_TwoRegistries: berth's process-global metrics go into every
// registry New makes (two agents in one test process), and each scrape
// shows what was recorded once.
func TestNew_TwoRegistries(t *testing.T) {
	a, err := telemetry.New("berth")
	must.NoError(t, err)
	b, err := telemetry.New("berth")
	must.NoError(t, err)
	telemetry.CSICalls.WithLabelValues("two-registries", "Probe", telemetry.CodeOK).Inc()
	n := telemetrytest.Counter(t, telemetry.CSICalls, "two-registries", "Probe", telemetry.CodeOK) // -count=N: N
	want := `berth_csi_calls_total{code="OK",method="Probe",plugin="two-registries"} ` + strconv.FormatFloat(n, 'g', -1, 64) + "\n"
	must.StrContains(t, telemetrytest.Scrape(t, a.Handler()), want)
	must.StrContains(t, telemetrytest.Scrape(t, b.Handler()), want)
}

// TestServerCollector: a follower reports its commit index only; the
// leader its state gauges too, zeros included; a failed read leaves the
// collector's metrics out of the scrape, and the rest in.
func TestServerCollector(t *testing.T) {
	stats := telemetry.ServerStats{CommitIndex: 42}
	var readErr error
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	must.NoError(t, tel.Registry.Register(telemetry.NewServerCollector(func() (telemetry.ServerStats, error) {
		return stats, readErr
	})))

	follower := telemetrytest.Scrape(t, tel.Handler())
	must.StrContains(t, follower, "berth_raft_commit_index 42\n")
	must.StrNotContains(t, follower, "berth_csi_claims")
	must.StrNotContains(t, follower, "berth_csi_volumes")

	stats = telemetry.ServerStats{CommitIndex: 43, Leader: true,
		ClaimsByState:        map[string]int{"taken": 2, "unpublishing": 1, "node-detached": 0},
		OldestReleaseSeconds: 12.5,
		Plugins:              []telemetry.PluginStats{{ID: "hostpath", ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 2, NodesExpected: 3}},
		Volumes: []telemetry.VolumeStats{{Plugin: "hostpath", Schedulable: true, Count: 5},
			{Plugin: "hostpath", Schedulable: false, Count: 0}},
	}
	leader := telemetrytest.Scrape(t, tel.Handler())
	for _, line := range []string{
		`berth_raft_commit_index 43`,
		`berth_csi_claims{state="taken"} 2`,
		`berth_csi_claims{state="unpublishing"} 1`,
		`berth_csi_claims{state="node-detached"} 0`,
		`berth_csi_claim_release_oldest_seconds 12.5`,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="controller"} 1`,
		`berth_csi_plugin_instances_expected{plugin="hostpath",type="controller"} 1`,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="node"} 2`,
		`berth_csi_plugin_instances_expected{plugin="hostpath",type="node"} 3`,
		`berth_csi_volumes{plugin="hostpath",schedulable="true"} 5`,
		`berth_csi_volumes{plugin="hostpath",schedulable="false"} 0`,
	} {
		must.StrContains(t, leader, line+"\n")
	}

	readErr = errors.New("state store gone")
	failed := telemetrytest.Scrape(t, tel.Handler())
	must.StrNotContains(t, failed, "berth_raft_commit_index")
	must.StrContains(t, failed, "# TYPE go_goroutines gauge")
}

// TestMetrics_Lint: every family berth defines, each with a series,
// passes the lint of `promtool check metrics` (names, units, _total,
// help): promlint's, and promtool's where it is installed.
func TestMetrics_Lint(t *testing.T) {
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	must.NoError(t, tel.Registry.Register(telemetry.NewServerCollector(func() (telemetry.ServerStats, error) {
		return telemetry.ServerStats{Leader: true, ClaimsByState: map[string]int{"taken": 1},
			Plugins: []telemetry.PluginStats{{ID: "lint"}}, Volumes: []telemetry.VolumeStats{{Plugin: "lint"}},
			VolumeUsage: []telemetry.VolumeUsageStats{fullUsage("lint")}}, nil
	})))
	recordOneOfEach()
	own, _ := telemetrytest.Lint(t, telemetrytest.Scrape(t, tel.Handler()))
	must.SliceEmpty(t, own)
}

// TestMetrics_Documented: the table of docs/metrics.md names every family
// berth defines (those with help text of their own: not go-metrics'), and
// only those.
func TestMetrics_Documented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	must.NoError(t, err)
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	must.NoError(t, tel.Registry.Register(telemetry.NewServerCollector(func() (telemetry.ServerStats, error) {
		return telemetry.ServerStats{Leader: true, ClaimsByState: map[string]int{"taken": 0},
			Plugins: []telemetry.PluginStats{{ID: "doc"}}, Volumes: []telemetry.VolumeStats{{Plugin: "doc"}},
			VolumeUsage: []telemetry.VolumeUsageStats{fullUsage("doc")}}, nil
	})))
	recordOneOfEach()
	own := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# HELP (berth_\S+) (.*)$`).FindAllStringSubmatch(telemetrytest.Scrape(t, tel.Handler()), -1) {
		if m[1] != m[2] {
			own[m[1]] = true
		}
	}
	must.MapLen(t, 21, own, must.Sprint("berth's own families"))
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(berth_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	must.Eq(t, own, documented)
}

// TestHistograms_BucketsFitWhatTheyMeasure: a histogram tells apart the
// durations its metric takes: a CSI controller call of 90 s (the servers
// allow two minutes) lands below +Inf, as a raft apply of 20 s (its timeout
// is 30 s) does; RPC reads from memory of 300 µs and 800 µs land in
// different buckets.
func TestHistograms_BucketsFitWhatTheyMeasure(t *testing.T) {
	upper := func(h prometheus.Observer, v float64) float64 { // the smallest bucket holding v
		t.Helper()
		before := buckets(t, h.(prometheus.Metric))
		h.Observe(v)
		after := buckets(t, h.(prometheus.Metric))
		for _, le := range slices.Sorted(maps.Keys(after)) {
			if after[le] > before[le] {
				return le
			}
		}
		return math.Inf(1)
	}
	csi := telemetry.CSICallDuration.WithLabelValues("buckets", "ControllerPublishVolume", telemetry.CodeOK)
	must.Eq(t, 120, upper(csi, 90))
	must.Eq(t, 30, upper(telemetry.RaftApplyDuration.WithLabelValues("BucketsTest"), 20))
	rpc := telemetry.RPCRequestDuration.WithLabelValues("Buckets.Test", telemetry.CodeOK, telemetry.NotBlocking)
	must.NotEq(t, upper(rpc, .0003), upper(rpc, .0008))
}

// buckets are a histogram's cumulative counts by upper bound.
func buckets(t *testing.T, m prometheus.Metric) map[float64]uint64 {
	t.Helper()
	var out dto.Metric
	must.NoError(t, m.Write(&out))
	counts := map[float64]uint64{}
	for _, b := range out.GetHistogram().GetBucket() {
		counts[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return counts
}

// recordOneOfEach gives every vector one series, under label values no
// other test uses.
func recordOneOfEach() {
	telemetry.RPCRequests.WithLabelValues("Lint.Test", telemetry.CodeOK).Inc()
	telemetry.RPCRequestDuration.WithLabelValues("Lint.Test", telemetry.CodeOK, telemetry.NotBlocking).Observe(.01)
	telemetry.RaftApplyDuration.WithLabelValues("LintTest").Observe(.01)
	telemetry.RaftLeaderChanges.Add(0)
	telemetry.FSMApplyDuration.WithLabelValues("LintTest").Observe(.0001)
	telemetry.CSICalls.WithLabelValues("lint", "Probe", telemetry.CodeOK).Inc()
	telemetry.CSICallDuration.WithLabelValues("lint", "Probe", telemetry.CodeOK).Observe(.001)
	telemetry.ClaimReleaseRetries.WithLabelValues("lint").Add(0)
	telemetry.NodeHeartbeatMisses.Add(0)
	telemetry.HTTPRequests.WithLabelValues("/lint", "GET", "200").Inc()
	telemetry.HTTPRequestDuration.WithLabelValues("/lint", "GET", "200", telemetry.NotBlocking).Observe(.001)
}

// fullUsage is a volume's usage with every figure, so that every usage
// family is reported.
func fullUsage(volume string) telemetry.VolumeUsageStats {
	used, capacity, inodes, abnormal := int64(1), int64(2), int64(3), false
	return telemetry.VolumeUsageStats{Namespace: "default", Volume: volume, UsedBytes: &used, CapacityBytes: &capacity,
		InodesUsed: &inodes, Abnormal: &abnormal}
}
