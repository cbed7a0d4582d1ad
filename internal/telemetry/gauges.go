package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The gauges a server reports at scrape time, read from its raft and its
// state store (ServerCollector). All but the commit index are reported by
// the leader only: every server holds the same state, and a sum over the
// servers must not count it three times.
var (
	RaftCommitIndexDesc = prometheus.NewDesc(Namespace+"_raft_commit_index",
		"The index of the last raft entry this server knows to be committed (every server reports its own).",
		nil, nil)
	CSIClaimsDesc = prometheus.NewDesc(Namespace+"_csi_claims",
		"Claims on CSI volumes, by state: taken (held by a live allocation), then unpublishing, node-detached and controller-detached while being released (a freed claim is gone). Leader only.",
		[]string{"state"}, nil)
	CSIClaimReleaseOldestDesc = prometheus.NewDesc(Namespace+"_csi_claim_release_oldest_seconds",
		"Age of the oldest claim being released and not freed yet: seconds since its allocation released it; 0 when no claim is being released. Leader only.",
		nil, nil)
	CSIPluginInstancesHealthyDesc = prometheus.NewDesc(Namespace+"_csi_plugin_instances_healthy",
		"Instances of a CSI plugin that are healthy on a ready node, by plugin ID and type (controller or node). Leader only.",
		[]string{"plugin", "type"}, nil)
	CSIPluginInstancesExpectedDesc = prometheus.NewDesc(Namespace+"_csi_plugin_instances_expected",
		"Instances of a CSI plugin that nodes report, healthy or not, by plugin ID and type (controller or node). Leader only.",
		[]string{"plugin", "type"}, nil)
	CSIVolumesDesc = prometheus.NewDesc(Namespace+"_csi_volumes",
		`CSI volumes, by plugin ID and whether they are schedulable ("true": the plugin has a healthy node instance and, if it needs one, a healthy controller). Leader only.`,
		[]string{"plugin", "schedulable"}, nil)
)

// ServerStats is what a server reports at scrape time. Every field but
// CommitIndex is read from the state store, and only on the leader.
type ServerStats struct {
	CommitIndex uint64
	Leader      bool

	// ClaimsByState counts claims by state name; every state to report,
	// zeros included, so that the series do not come and go.
	ClaimsByState map[string]int
	// OldestReleaseSeconds is the age of the oldest claim being released.
	OldestReleaseSeconds float64
	Plugins              []PluginStats
	Volumes              []VolumeStats
}

// PluginStats is one plugin's instance counts.
type PluginStats struct {
	ID                                      string
	ControllersHealthy, ControllersExpected int
	NodesHealthy, NodesExpected             int
}

// VolumeStats counts one plugin's volumes of one schedulability.
type VolumeStats struct {
	Plugin      string
	Schedulable bool
	Count       int
}

// ServerCollector reports a server's ServerStats, read by read at each
// scrape. A failed read is reported as an invalid metric: the scrape keeps
// the other collectors' metrics (Handler continues on error).
type ServerCollector struct {
	read func() (ServerStats, error)
}

var _ prometheus.Collector = (*ServerCollector)(nil)

// NewServerCollector returns a collector over read.
func NewServerCollector(read func() (ServerStats, error)) *ServerCollector {
	return &ServerCollector{read: read}
}

// Describe sends every Desc the collector may report.
func (c *ServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{RaftCommitIndexDesc, CSIClaimsDesc, CSIClaimReleaseOldestDesc,
		CSIPluginInstancesHealthyDesc, CSIPluginInstancesExpectedDesc, CSIVolumesDesc} {
		ch <- d
	}
}

// Collect reads the stats and sends them.
func (c *ServerCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(CSIClaimsDesc, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(RaftCommitIndexDesc, float64(st.CommitIndex))
	if !st.Leader {
		return
	}
	for state, n := range st.ClaimsByState {
		gauge(CSIClaimsDesc, float64(n), state)
	}
	gauge(CSIClaimReleaseOldestDesc, st.OldestReleaseSeconds)
	for _, p := range st.Plugins {
		gauge(CSIPluginInstancesHealthyDesc, float64(p.ControllersHealthy), p.ID, "controller")
		gauge(CSIPluginInstancesExpectedDesc, float64(p.ControllersExpected), p.ID, "controller")
		gauge(CSIPluginInstancesHealthyDesc, float64(p.NodesHealthy), p.ID, "node")
		gauge(CSIPluginInstancesExpectedDesc, float64(p.NodesExpected), p.ID, "node")
	}
	for _, v := range st.Volumes {
		sched := "false"
		if v.Schedulable {
			sched = "true"
		}
		gauge(CSIVolumesDesc, float64(v.Count), v.Plugin, sched)
	}
}
