package server

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// metricsStore is a state store with a claim in every state and two
// plugins' worth of volumes:
//   - hostpath: a healthy controller and node instance on n1 and an
//     unhealthy node instance on n2; volumes v1 to v5, all schedulable,
//     claimed by a1 to a5 on n1: v1 and v2 taken, v3 unpublishing, v4
//     node-detached, v5 controller-detached;
//   - lost: a healthy node instance on n3, which is down; volume v6, not
//     schedulable.
//
// The releases began at t0+10s (v3), t0 (v4) and t0+5s (v5); v4's and
// v5's later steps came after, up to t0+30s.
func metricsStore(t *testing.T, t0 time.Time) *state.StateStore {
	t.Helper()
	s := statetest.New(t)
	must.NoError(t, s.UpsertNode(1, statetest.NodeWithPlugin("n1", "hostpath", true, true, true)))
	must.NoError(t, s.UpsertNode(2, statetest.NodeWithPlugin("n2", "hostpath", false, true, false)))
	down := statetest.NodeWithPlugin("n3", "lost", false, true, true)
	down.Status = structs.NodeStatusDown
	must.NoError(t, s.UpsertNode(3, down))
	var allocs []*structs.Allocation
	var vols []*structs.CSIVolume
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		allocs = append(allocs, statetest.Alloc("a"+id, "n1"))
		vols = append(vols, statetest.Volume("v"+id, "hostpath"))
	}
	must.NoError(t, s.ApplyPlan(4, &structs.PlanApplyRequest{Allocs: allocs}))
	vols = append(vols, statetest.Volume("v6", "lost"))
	must.NoError(t, s.UpsertCSIVolume(5, vols))

	index := uint64(6)
	claim := func(vol, alloc string, st structs.CSIVolumeClaimState, at time.Time) {
		t.Helper()
		errs := s.CSIVolumeClaimBatch(index, []structs.CSIVolumeClaimRequest{{VolumeID: vol, AllocationID: alloc,
			Mode: structs.CSIVolumeClaimWrite, State: st, Timestamp: at,
			WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}}})
		must.NoError(t, errs[0])
		index++
	}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		claim("v"+id, "a"+id, structs.CSIVolumeClaimStateTaken, t0.Add(-time.Hour))
	}
	claim("v3", "a3", structs.CSIVolumeClaimStateUnpublishing, t0.Add(10*time.Second))
	claim("v4", "a4", structs.CSIVolumeClaimStateUnpublishing, t0)
	claim("v4", "a4", structs.CSIVolumeClaimStateNodeDetached, t0.Add(20*time.Second))
	claim("v5", "a5", structs.CSIVolumeClaimStateUnpublishing, t0.Add(5*time.Second))
	claim("v5", "a5", structs.CSIVolumeClaimStateNodeDetached, t0.Add(25*time.Second))
	claim("v5", "a5", structs.CSIVolumeClaimStateControllerDetached, t0.Add(30*time.Second))
	return s
}

// TestClusterStats: claims are counted by state, the oldest release is
// aged from when its claim left taken (not its last step), plugin
// instances are counted as the API shows them (an instance on a down node
// is not healthy), and volumes by plugin and schedulability, both series
// for each plugin.
func TestClusterStats(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	s := metricsStore(t, t0)

	v4, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, "v4")
	must.NoError(t, err)
	must.Eq(t, t0, v4.PastClaims["a4"].ReleasedAt, must.Sprint("kept from the release, through later steps"))
	must.Eq(t, t0.Add(20*time.Second), v4.PastClaims["a4"].UpdatedAt)

	st, err := clusterStats(s, t0.Add(100*time.Second), telemetry.ServerStats{CommitIndex: 9})
	must.NoError(t, err)
	must.Eq(t, telemetry.ServerStats{
		CommitIndex: 9,
		Leader:      true,
		ClaimsByState: map[string]int{
			"taken": 2, "unpublishing": 1, "node-detached": 1, "controller-detached": 1,
		},
		OldestReleaseSeconds: 100,
		Plugins: []telemetry.PluginStats{
			{ID: "hostpath", ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 2},
			{ID: "lost", NodesExpected: 1},
		},
		Volumes: []telemetry.VolumeStats{
			{Plugin: "hostpath", Schedulable: true, Count: 5},
			{Plugin: "hostpath", Schedulable: false, Count: 0},
			{Plugin: "lost", Schedulable: true, Count: 0},
			{Plugin: "lost", Schedulable: false, Count: 1},
		},
	}, st)
}

// TestClusterStats_Empty: an empty store reports every claim state at 0
// and no release.
func TestClusterStats_Empty(t *testing.T) {
	st, err := clusterStats(statetest.New(t), time.Now(), telemetry.ServerStats{})
	must.NoError(t, err)
	must.Eq(t, map[string]int{"taken": 0, "unpublishing": 0, "node-detached": 0, "controller-detached": 0}, st.ClaimsByState)
	must.Eq(t, 0, st.OldestReleaseSeconds)
	must.SliceEmpty(t, st.Plugins)
	must.SliceEmpty(t, st.Volumes)
}

// TestClusterStats_RestoredClaims: claims from a state written before
// freed claims were dropped and ReleasedAt was kept, as a snapshot restores
// them: a freed claim still in PastClaims is neither counted nor aged (the
// GC removes it), a claim being released without ReleasedAt is aged from
// its last step, and one with no time at all is counted, not aged.
func TestClusterStats_RestoredClaims(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	s := statetest.New(t)
	vol := statetest.Volume("v1", "hostpath")
	vol.CreateIndex, vol.ModifyIndex = 1, 1
	vol.PastClaims = map[string]*structs.CSIVolumeClaim{
		"a1": {AllocID: "a1", NodeID: "n1", Mode: structs.CSIVolumeClaimWrite,
			State: structs.CSIVolumeClaimStateFreed, UpdatedAt: t0.Add(-time.Hour)},
		"a2": {AllocID: "a2", NodeID: "n1", Mode: structs.CSIVolumeClaimWrite,
			State: structs.CSIVolumeClaimStateNodeDetached, UpdatedAt: t0},
	}
	r, err := s.Restore()
	must.NoError(t, err)
	must.NoError(t, r.Insert(state.TableCSIVolumes, vol))
	for i := range 8 { // volumes are read in ID order: unstamped ones before and after v1
		v := statetest.Volume(fmt.Sprintf("v%d%d", i%2*2, i), "hostpath")
		v.CreateIndex, v.ModifyIndex = 1, 1
		v.PastClaims = map[string]*structs.CSIVolumeClaim{"u": {AllocID: "u", NodeID: "n1", Mode: structs.CSIVolumeClaimWrite,
			State: structs.CSIVolumeClaimStateUnpublishing}}
		must.NoError(t, r.Insert(state.TableCSIVolumes, v))
	}
	r.Commit()

	st, err := clusterStats(s, t0.Add(100*time.Second), telemetry.ServerStats{})
	must.NoError(t, err)
	must.Eq(t, map[string]int{"taken": 0, "unpublishing": 8, "node-detached": 1, "controller-detached": 0}, st.ClaimsByState)
	must.Eq(t, 100, st.OldestReleaseSeconds)
}

// BenchmarkClusterStats measures one scrape's read of the state store:
// 50,000 volumes of one plugin, one in ten claimed and one in a hundred
// being released.
func BenchmarkClusterStats(b *testing.B) {
	s := statetest.New(b)
	must.NoError(b, s.UpsertNode(1, statetest.NodeWithPlugin("n1", "hostpath", true, true, true)))
	const n = 50_000
	var allocs []*structs.Allocation
	for i := range n / 10 {
		allocs = append(allocs, statetest.Alloc(metricsAllocID(i), "n1"))
	}
	must.NoError(b, s.ApplyPlan(2, &structs.PlanApplyRequest{Allocs: allocs}))
	index := uint64(3)
	for i := 0; i < n; i += 1000 {
		var vols []*structs.CSIVolume
		for j := i; j < i+1000; j++ {
			vols = append(vols, statetest.Volume(metricsVolID(j), "hostpath"))
		}
		must.NoError(b, s.UpsertCSIVolume(index, vols))
		index++
	}
	var claims []structs.CSIVolumeClaimRequest
	for i := range n / 10 {
		claims = append(claims, structs.CSIVolumeClaimRequest{VolumeID: metricsVolID(i * 10), AllocationID: metricsAllocID(i),
			Mode: structs.CSIVolumeClaimWrite, WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}})
	}
	for _, err := range s.CSIVolumeClaimBatch(index, claims) {
		must.NoError(b, err)
	}
	index++
	claims = claims[:0]
	for i := 0; i < n/10; i += 10 {
		claims = append(claims, structs.CSIVolumeClaimRequest{VolumeID: metricsVolID(i * 10), AllocationID: metricsAllocID(i),
			State: structs.CSIVolumeClaimStateUnpublishing, Timestamp: time.Now(),
			WriteRequest: structs.WriteRequest{Namespace: structs.DefaultNamespace}})
	}
	for _, err := range s.CSIVolumeClaimBatch(index, claims) {
		must.NoError(b, err)
	}
	b.ResetTimer()
	for b.Loop() {
		st, err := clusterStats(s, time.Now(), telemetry.ServerStats{})
		if err != nil || st.ClaimsByState["taken"] != n/10-n/100 || st.ClaimsByState["unpublishing"] != n/100 {
			b.Fatalf("stats %+v, %v", st.ClaimsByState, err)
		}
	}
}

func metricsVolID(i int) string   { return "vol-" + strconv.Itoa(i) }
func metricsAllocID(i int) string { return "alloc-" + strconv.Itoa(i) }

// TestVolumeUsage_Metrics: a volume's figures are its newest report's
// among its taken claims; it is abnormal when any claim says so; a volume
// with no report, or only a released claim's, has no series.
func TestVolumeUsage_Metrics(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	report := func(used int64, abnormal bool, at time.Time) *structs.CSIVolumeUsage {
		return &structs.CSIVolumeUsage{Bytes: &structs.CSIUsageAmount{Used: used, Total: 1000},
			Inodes: &structs.CSIUsageAmount{Used: used / 10}, Condition: &structs.CSIVolumeCondition{Abnormal: abnormal}, CollectedAt: at}
	}
	v := &structs.CSIVolume{ID: "v1", Namespace: "prod",
		WriteClaims: map[string]*structs.CSIVolumeClaim{"a1": {AllocID: "a1", Usage: report(100, false, t0.Add(time.Minute))}},
		ReadClaims: map[string]*structs.CSIVolumeClaim{"a2": {AllocID: "a2", Usage: report(90, true, t0)},
			"a3": {AllocID: "a3"}},
		PastClaims: map[string]*structs.CSIVolumeClaim{"a4": {AllocID: "a4", Usage: report(500, false, t0.Add(time.Hour))}},
	}
	got, ok := volumeUsage(v)
	must.True(t, ok)
	used, capacity, inodes, abnormal := int64(100), int64(1000), int64(10), true
	must.Eq(t, telemetry.VolumeUsageStats{Namespace: "prod", Volume: "v1", UsedBytes: &used, CapacityBytes: &capacity,
		InodesUsed: &inodes, Abnormal: &abnormal}, got)

	// Stats without health, and health without stats.
	v.ReadClaims, v.WriteClaims["a1"].Usage.Condition = nil, nil
	got, ok = volumeUsage(v)
	must.True(t, ok)
	must.Nil(t, got.Abnormal)
	v.WriteClaims["a1"].Usage = &structs.CSIVolumeUsage{Condition: &structs.CSIVolumeCondition{}}
	got, ok = volumeUsage(v)
	must.True(t, ok)
	must.Nil(t, got.UsedBytes)
	must.False(t, *got.Abnormal)

	v.WriteClaims["a1"].Usage = nil
	_, ok = volumeUsage(v)
	must.False(t, ok, must.Sprint("only a released claim has a report"))
}
