package server

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// MetricsCollector is the server's scrape-time gauges: its raft commit
// index and, while it leads, the claims, plugins and volumes of its state
// store (clusterStats). Followers hold the same state and leave it out, so
// that a sum over the servers counts it once. The agent registers it in
// its registry.
func (s *Server) MetricsCollector() *telemetry.ServerCollector {
	return telemetry.NewServerCollector(func() (telemetry.ServerStats, error) {
		st := telemetry.ServerStats{CommitIndex: s.raft.CommitIndex()}
		if !s.isLeader() {
			return st, nil
		}
		return clusterStats(s.State(), time.Now(), st)
	})
}

// clusterStats fills st from one snapshot of store, as of now: one pass
// over the plugins (denormalized: their health depends on their nodes)
// and one over the volumes, each joined to its plugin's schedulability
// from the first pass, never denormalized one by one.
func clusterStats(store *state.StateStore, now time.Time, st telemetry.ServerStats) (telemetry.ServerStats, error) {
	snap, err := store.Snapshot()
	if err != nil {
		return st, err
	}
	st.Leader = true
	st.ClaimsByState = map[string]int{}
	for c := structs.CSIVolumeClaimStateTaken; c < structs.CSIVolumeClaimStateFreed; c++ {
		st.ClaimsByState[c.String()] = 0 // a freed claim is deleted: never counted
	}

	schedulable := map[string]bool{}
	plugins, err := snap.CSIPlugins(nil)
	if err != nil {
		return st, fmt.Errorf("metrics: list plugins: %w", err)
	}
	for raw := plugins.Next(); raw != nil; raw = plugins.Next() {
		p := raw.(*structs.CSIPlugin) // its row holds its counts
		st.Plugins = append(st.Plugins, telemetry.PluginStats{ID: p.ID,
			ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
			NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected})
		var probe structs.CSIVolume // the volume's own rule, for this plugin
		probe.JoinPlugin(p)
		schedulable[p.ID] = probe.Schedulable
	}

	type counts struct{ yes, no int }
	byPlugin := map[string]*counts{}
	var oldest time.Time
	vols, err := snap.CSIVolumes(nil)
	if err != nil {
		return st, fmt.Errorf("metrics: list volumes: %w", err)
	}
	for raw := vols.Next(); raw != nil; raw = vols.Next() {
		v := raw.(*structs.CSIVolume)
		c := byPlugin[v.PluginID]
		if c == nil {
			c = &counts{}
			byPlugin[v.PluginID] = c
		}
		if schedulable[v.PluginID] {
			c.yes++
		} else {
			c.no++
		}
		st.ClaimsByState[structs.CSIVolumeClaimStateTaken.String()] += len(v.ReadClaims) + len(v.WriteClaims)
		if u, ok := volumeUsage(v); ok {
			st.VolumeUsage = append(st.VolumeUsage, u)
		}
		for _, claim := range v.PastClaims {
			if claim == nil || claim.State >= structs.CSIVolumeClaimStateFreed {
				continue // freed before freed claims were dropped; the GC removes it
			}
			st.ClaimsByState[claim.State.String()]++
			released := claim.ReleasedAt
			if released.IsZero() { // released before ReleasedAt was kept
				released = claim.UpdatedAt
			}
			if !released.IsZero() && (oldest.IsZero() || released.Before(oldest)) {
				oldest = released
			}
		}
	}
	if !oldest.IsZero() && now.After(oldest) {
		st.OldestReleaseSeconds = now.Sub(oldest).Seconds()
	}
	for _, id := range slices.Sorted(maps.Keys(byPlugin)) {
		c := byPlugin[id]
		st.Volumes = append(st.Volumes,
			telemetry.VolumeStats{Plugin: id, Schedulable: true, Count: c.yes},
			telemetry.VolumeStats{Plugin: id, Schedulable: false, Count: c.no})
	}
	return st, nil
}

// volumeUsage is a volume's usage for the metrics: the figures of the
// newest report among its taken claims, and abnormal if any of them says
// so; false when no claim has a report.
func volumeUsage(v *structs.CSIVolume) (telemetry.VolumeUsageStats, bool) {
	var newest *structs.CSIVolumeUsage
	abnormal, condition := false, false
	for _, m := range []map[string]*structs.CSIVolumeClaim{v.WriteClaims, v.ReadClaims} {
		for _, c := range m {
			u := c.Usage
			if u == nil {
				continue
			}
			if u.Condition != nil {
				condition = true
				abnormal = abnormal || u.Condition.Abnormal
			}
			if u.Bytes != nil || u.Inodes != nil {
				if newest == nil || u.CollectedAt.After(newest.CollectedAt) {
					newest = u
				}
			}
		}
	}
	if newest == nil && !condition {
		return telemetry.VolumeUsageStats{}, false
	}
	out := telemetry.VolumeUsageStats{Namespace: v.Namespace, Volume: v.ID}
	if newest != nil && newest.Bytes != nil {
		out.UsedBytes, out.CapacityBytes = &newest.Bytes.Used, &newest.Bytes.Total
	}
	if newest != nil && newest.Inodes != nil {
		out.InodesUsed = &newest.Inodes.Used
	}
	if condition {
		out.Abnormal = &abnormal
	}
	return out, true
}
