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
	CSIVolumeUsedBytesDesc = prometheus.NewDesc(Namespace+"_csi_volume_used_bytes",
		"Bytes used on a CSI volume, as its node plugin last reported it (NodeGetVolumeStats) where an allocation holds it; the newest report of its claims. Only volumes with a report. Leader only.",
		[]string{"namespace", "volume"}, nil)
	CSIVolumeCapacityBytesDesc = prometheus.NewDesc(Namespace+"_csi_volume_capacity_bytes",
		"Total bytes of a CSI volume, as its node plugin last reported it (NodeGetVolumeStats). Only volumes with a report. Leader only.",
		[]string{"namespace", "volume"}, nil)
	CSIVolumeInodesUsedDesc = prometheus.NewDesc(Namespace+"_csi_volume_inodes_used",
		"Inodes used on a CSI volume, as its node plugin last reported it (NodeGetVolumeStats). Only volumes with a report of inodes. Leader only.",
		[]string{"namespace", "volume"}, nil)
	CSIVolumeConditionAbnormalDesc = prometheus.NewDesc(Namespace+"_csi_volume_condition_abnormal",
		"1 when the node plugin of any claim on a CSI volume reports it abnormal (NodeGetVolumeHealth), else 0. Only volumes whose plugin reports health. Leader only.",
		[]string{"namespace", "volume"}, nil)
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
	// VolumeUsage is the usage of each volume with a report.
	VolumeUsage []VolumeUsageStats
}

// VolumeUsageStats is one volume's usage as its node plugins last
// reported it; a nil figure was not reported.
type VolumeUsageStats struct {
	Namespace, Volume string
	UsedBytes         *int64
	CapacityBytes     *int64
	InodesUsed        *int64
	Abnormal          *bool
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
		CSIPluginInstancesHealthyDesc, CSIPluginInstancesExpectedDesc, CSIVolumesDesc,
		CSIVolumeUsedBytesDesc, CSIVolumeCapacityBytesDesc, CSIVolumeInodesUsedDesc, CSIVolumeConditionAbnormalDesc} {
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
	for _, u := range st.VolumeUsage {
		for _, g := range []struct {
			d *prometheus.Desc
			v *int64
		}{{CSIVolumeUsedBytesDesc, u.UsedBytes}, {CSIVolumeCapacityBytesDesc, u.CapacityBytes}, {CSIVolumeInodesUsedDesc, u.InodesUsed}} {
			if g.v != nil {
				gauge(g.d, float64(*g.v), u.Namespace, u.Volume)
			}
		}
		if u.Abnormal != nil {
			v := 0.0
			if *u.Abnormal {
				v = 1
			}
			gauge(CSIVolumeConditionAbnormalDesc, v, u.Namespace, u.Volume)
		}
	}
}
