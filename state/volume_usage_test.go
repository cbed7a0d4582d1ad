package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

func usageReport(alloc, vol string, used int64, abnormal bool) *structs.CSIVolumeUsageReport {
	u := &structs.CSIVolumeUsage{Bytes: &structs.CSIUsageAmount{Used: used, Total: 1 << 30, Available: 1<<30 - used},
		Condition: &structs.CSIVolumeCondition{Abnormal: abnormal}, CollectedAt: time.Unix(int64(used), 0)}
	if abnormal {
		u.Condition.Message = "INACCESSIBLE VolumeDirMissing"
	}
	return &structs.CSIVolumeUsageReport{AllocID: alloc, VolumeID: vol, Usage: u}
}

// A node's usage report lands on the claim of its own allocation only: a
// report for an allocation of another node, for a volume the allocation
// does not hold, or for no allocation at all changes nothing; the node row
// is not written by usage alone, and a report with the figures the claim
// has already writes nothing (no index moves). The condition turning
// abnormal and back are events of their own; a usage change is
// VolumeUpdated.
func TestStateStore_VolumeUsage_LandsOnOwnClaim(t *testing.T) {
	s := claimWorld(t)
	rec := &recorder{}
	s.SetEventSink(rec)
	must.NoError(t, claimOne(s, 10, claimReq("snw", "a1", write)))
	must.NoError(t, claimOne(s, 11, claimReq("mnr", "b1", read)))
	nodeIndex := mustIndex(t, s, state.TableNodes)
	rec.take()

	must.NoError(t, s.UpdateNodeFingerprint(12, &structs.NodeFingerprintRequest{NodeID: "n1", VolumeUsage: []*structs.CSIVolumeUsageReport{
		usageReport("a1", "snw", 100, false),
		usageReport("b1", "mnr", 200, false), // b1 runs on n2
		usageReport("a1", "mnr", 300, false), // a1 holds no claim on mnr
		usageReport("gone", "snw", 400, false),
	}}))
	got := mustVolume(t, s, "snw").WriteClaims["a1"].Usage
	must.NotNil(t, got)
	must.Eq(t, int64(100), got.Bytes.Used)
	must.Nil(t, mustVolume(t, s, "mnr").ReadClaims["b1"].Usage)
	must.Eq(t, nodeIndex, mustIndex(t, s, state.TableNodes))
	must.Eq(t, uint64(12), mustIndex(t, s, state.TableCSIVolumes))
	evs := rec.take()
	must.Len(t, 1, evs)
	must.Eq(t, structs.EventVolumeUpdated, evs[0].Type)

	// The same figures again: nothing written.
	must.NoError(t, s.UpdateNodeFingerprint(13, &structs.NodeFingerprintRequest{NodeID: "n1",
		VolumeUsage: []*structs.CSIVolumeUsageReport{usageReport("a1", "snw", 100, false)}}))
	must.Eq(t, uint64(12), mustIndex(t, s, state.TableCSIVolumes))
	must.SliceEmpty(t, rec.take())

	// Abnormal, then normal again: one event each, with the claim.
	must.NoError(t, s.UpdateNodeFingerprint(14, &structs.NodeFingerprintRequest{NodeID: "n1",
		VolumeUsage: []*structs.CSIVolumeUsageReport{usageReport("a1", "snw", 100, true)}}))
	must.NoError(t, s.UpdateNodeFingerprint(15, &structs.NodeFingerprintRequest{NodeID: "n1",
		VolumeUsage: []*structs.CSIVolumeUsageReport{usageReport("a1", "snw", 150, false)}}))
	evs = rec.take()
	must.Len(t, 2, evs)
	must.Eq(t, structs.EventVolumeConditionAbnormal, evs[0].Type)
	must.Eq(t, "a1", evs[0].Payload.Claim.AllocID)
	must.True(t, evs[0].Payload.Claim.Usage.IsAbnormal())
	must.Eq(t, structs.EventVolumeConditionNormal, evs[1].Type)
	must.Eq(t, int64(150), evs[1].Payload.Claim.Usage.Bytes.Used)

	// A renewal of the claim keeps the usage.
	must.NoError(t, claimOne(s, 16, claimReq("snw", "a1", write)))
	must.Eq(t, int64(150), mustVolume(t, s, "snw").WriteClaims["a1"].Usage.Bytes.Used)
}

// Malformed reports are refused, naming the node and the volume, before
// anything of the delta is written: its plugin changes do not land either.
func TestStateStore_VolumeUsage_Refused(t *testing.T) {
	s := claimWorld(t)
	must.NoError(t, claimOne(s, 10, claimReq("snw", "a1", write)))
	negative := usageReport("a1", "snw", 100, false)
	negative.Usage.Bytes.Used = -1
	long := usageReport("a1", "snw", 100, true)
	long.Usage.Condition.Message = strings.Repeat("x", structs.MaxUsageMessage+1)
	many := make([]*structs.CSIVolumeUsageReport, structs.MaxUsageReports+1)
	for i := range many {
		many[i] = usageReport("a1", "snw", 100, false)
	}
	for name, tc := range map[string]struct {
		reports []*structs.CSIVolumeUsageReport
		want    string
	}{
		"negative":      {[]*structs.CSIVolumeUsageReport{negative}, `usage of volume "snw" for alloc a1: bytes figures are negative`},
		"long message":  {[]*structs.CSIVolumeUsageReport{long}, "condition message is 1025 bytes"},
		"no usage":      {[]*structs.CSIVolumeUsageReport{{AllocID: "a1", VolumeID: "snw"}}, "no usage"},
		"no volume":     {[]*structs.CSIVolumeUsageReport{{AllocID: "a1", Usage: &structs.CSIVolumeUsage{}}}, "names no alloc or no volume"},
		"too many":      {many, "more than 256"},
		"nil in a list": {[]*structs.CSIVolumeUsageReport{nil}, "report 1 of 1"},
	} {
		t.Run(name, func(t *testing.T) {
			before := mustIndex(t, s, state.TableNodes)
			err := s.UpdateNodeFingerprint(20, &structs.NodeFingerprintRequest{NodeID: "n1", VolumeUsage: tc.reports,
				Events: []*structs.NodeEvent{{Message: "must not land"}}})
			mustCode(t, structs.ErrBadRequest, err)
			must.StrContains(t, err.Error(), `node "n1"`)
			must.StrContains(t, err.Error(), tc.want)
			must.Eq(t, before, mustIndex(t, s, state.TableNodes))
			must.Nil(t, mustVolume(t, s, "snw").WriteClaims["a1"].Usage)
		})
	}
}

// In a batch, a refused delta leaves the others' usage to land.
func TestStateStore_VolumeUsage_Batch(t *testing.T) {
	s := claimWorld(t)
	must.NoError(t, claimOne(s, 10, claimReq("snw", "a1", write)))
	must.NoError(t, claimOne(s, 11, claimReq("mnr", "b1", read)))
	bad := usageReport("b1", "mnr", 1, false)
	bad.Usage.Inodes = &structs.CSIUsageAmount{Total: -5}
	errs := s.UpdateNodeFingerprintBatch(12, []structs.NodeFingerprintRequest{
		{NodeID: "n1", VolumeUsage: []*structs.CSIVolumeUsageReport{usageReport("a1", "snw", 7, false)}},
		{NodeID: "n2", VolumeUsage: []*structs.CSIVolumeUsageReport{bad}},
	})
	must.NoError(t, errs[0])
	mustCode(t, structs.ErrBadRequest, errs[1])
	must.Eq(t, int64(7), mustVolume(t, s, "snw").WriteClaims["a1"].Usage.Bytes.Used)
	must.Nil(t, mustVolume(t, s, "mnr").ReadClaims["b1"].Usage)
}
