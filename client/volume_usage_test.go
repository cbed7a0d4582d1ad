package client

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func usageOf(alloc, vol string, used int64, at time.Time) *structs.CSIVolumeUsageReport {
	return &structs.CSIVolumeUsageReport{AllocID: alloc, VolumeID: vol, Usage: &structs.CSIVolumeUsage{
		Bytes: &structs.CSIUsageAmount{Used: used, Total: 100}, CollectedAt: at}}
}

// Usage goes to the servers only when its figures change: a collection
// that finds what the servers have sends nothing, whatever its time; a
// report replaced while its send was in flight stays pending; a use gone
// from the collection is forgotten; one send carries at most
// MaxUsageReports, the rest the next.
func TestNodeUpdater_UsageOnlyWhatChanged(t *testing.T) {
	u := newNodeUpdater(&Client{})
	t0 := time.Unix(1000, 0)

	first := []*structs.CSIVolumeUsageReport{usageOf("a1", "v1", 10, t0), usageOf("a2", "v1", 20, t0)}
	u.usageCollected(first)
	u.mu.Lock()
	sent := u.usageToSendLocked()
	must.Len(t, 2, sent)
	must.False(t, u.usageSentLocked(sent))
	u.mu.Unlock()
	must.MapLen(t, 2, u.usageAcked)

	// The same figures, collected later: nothing to send.
	u.usageCollected([]*structs.CSIVolumeUsageReport{usageOf("a1", "v1", 10, t0.Add(time.Minute)), usageOf("a2", "v1", 20, t0.Add(time.Minute))})
	must.MapEmpty(t, u.usagePending)

	// a1 grew; a2's use is gone (unpublished).
	u.usageCollected([]*structs.CSIVolumeUsageReport{usageOf("a1", "v1", 11, t0.Add(2*time.Minute))})
	must.MapLen(t, 1, u.usagePending)
	must.MapNotContainsKey(t, u.usageAcked, usageKey{"a2", "v1"})

	// A newer collection while the send is in flight: the send's ack
	// does not cover it.
	u.mu.Lock()
	inFlight := u.usageToSendLocked()
	u.mu.Unlock()
	u.usageCollected([]*structs.CSIVolumeUsageReport{usageOf("a1", "v1", 12, t0.Add(3*time.Minute))})
	u.mu.Lock()
	must.True(t, u.usageSentLocked(inFlight))
	u.mu.Unlock()
	must.Eq(t, int64(11), u.usageAcked[usageKey{"a1", "v1"}].Bytes.Used)
	must.Eq(t, int64(12), u.usagePending[usageKey{"a1", "v1"}].Usage.Bytes.Used)

	// Bounded sends.
	var many []*structs.CSIVolumeUsageReport
	for i := range structs.MaxUsageReports + 10 {
		many = append(many, usageOf("a1", string(rune('A'+i%26))+string(rune('a'+i/26)), int64(i), t0))
	}
	u.usageCollected(many)
	u.mu.Lock()
	defer u.mu.Unlock()
	batch := u.usageToSendLocked()
	must.Len(t, structs.MaxUsageReports, batch)
	must.True(t, u.usageSentLocked(batch))
	must.MapLen(t, 10, u.usagePending)
}

// A collection that failed keeps the figures last collected (an abnormal
// volume stays abnormal; its used bytes stay), with the error.
func TestNodeUpdater_UsageFailedCollectionKeepsFigures(t *testing.T) {
	u := newNodeUpdater(&Client{})
	t0 := time.Unix(1000, 0)
	first := usageOf("a1", "v1", 10, t0)
	first.Usage.Condition = &structs.CSIVolumeCondition{Abnormal: true, Message: "INACCESSIBLE"}
	u.usageCollected([]*structs.CSIVolumeUsageReport{first})
	u.mu.Lock()
	u.usageSentLocked(u.usageToSendLocked())
	u.mu.Unlock()

	failed := &structs.CSIVolumeUsageReport{AllocID: "a1", VolumeID: "v1", Usage: &structs.CSIVolumeUsage{
		Error: "NodeGetVolumeStats: DeadlineExceeded", CollectedAt: t0.Add(time.Minute)}}
	u.usageCollected([]*structs.CSIVolumeUsageReport{failed})
	got := u.usagePending[usageKey{"a1", "v1"}]
	must.NotNil(t, got)
	must.Eq(t, int64(10), got.Usage.Bytes.Used)
	must.True(t, got.Usage.IsAbnormal())
	must.Eq(t, "NodeGetVolumeStats: DeadlineExceeded", got.Usage.Error)
}
