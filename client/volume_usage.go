package client

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// volumeUsageLoop collects the usage of the volumes published here every
// VolumeStatsInterval (jittered by a tenth either way, so that a fleet's
// clients do not ask together) and hands it to the node updater, which
// sends what changed. It never runs on a claim's path: it takes no
// volume's lock and waits for no mount.
func (c *Client) volumeUsageLoop(ctx context.Context) {
	interval := c.config.VolumeStatsInterval
	if interval <= 0 {
		return
	}
	for {
		wait := time.Duration(float64(interval) * (0.9 + 0.2*rand.Float64()))
		if !backoff.Sleep(ctx, wait) {
			return
		}
		c.updater.usageCollected(c.volumes.CollectUsage(ctx, timeNow))
	}
}

// usageKey is one allocation's use of a volume.
type usageKey struct{ alloc, volume string }

// usageCollected records a collection: a report whose figures the servers
// have already is dropped, the rest wait for the next send; a use no
// longer in the collection (unpublished) is forgotten.
func (u *nodeUpdater) usageCollected(reports []*structs.CSIVolumeUsageReport) {
	u.mu.Lock()
	current := make(map[usageKey]bool, len(reports))
	for _, r := range reports {
		k := usageKey{r.AllocID, r.VolumeID}
		current[k] = true
		if r.Usage.Error != "" {
			u.keepLastFigures(k, r.Usage)
		}
		if u.usageAcked[k].SameFigures(r.Usage) {
			delete(u.usagePending, k)
			continue
		}
		u.usagePending[k] = r
	}
	for k := range u.usageAcked {
		if !current[k] {
			delete(u.usageAcked, k)
		}
	}
	for k := range u.usagePending {
		if !current[k] {
			delete(u.usagePending, k)
		}
	}
	more := len(u.usagePending) > 0
	u.mu.Unlock()
	if more {
		notify(u.kick)
	}
}

// usageToSendLocked is at most MaxUsageReports of the pending reports.
func (u *nodeUpdater) usageToSendLocked() []*structs.CSIVolumeUsageReport {
	out := make([]*structs.CSIVolumeUsageReport, 0, min(len(u.usagePending), structs.MaxUsageReports))
	for _, r := range u.usagePending {
		if len(out) == structs.MaxUsageReports {
			break
		}
		out = append(out, r)
	}
	return out
}

// usageSentLocked records what the servers acknowledged: a report a
// newer collection replaced meanwhile stays pending (the servers have the
// older), and one whose use was forgotten meanwhile is not kept. It
// reports whether some reports wait still.
func (u *nodeUpdater) usageSentLocked(sent []*structs.CSIVolumeUsageReport) bool {
	for _, r := range sent {
		k := usageKey{r.AllocID, r.VolumeID}
		switch p := u.usagePending[k]; {
		case p == r:
			delete(u.usagePending, k)
			u.usageAcked[k] = r.Usage
		case p != nil:
			u.usageAcked[k] = r.Usage
		}
	}
	return len(u.usagePending) > 0
}

// keepLastFigures fills what a failed collection could not say with the
// figures last collected for k (pending or acknowledged), so that a call
// that timed out neither wipes the usage nor reports an abnormal volume
// back to normal; its Error says the figures are not fresh.
func (u *nodeUpdater) keepLastFigures(k usageKey, usage *structs.CSIVolumeUsage) {
	last := u.usageAcked[k]
	if p := u.usagePending[k]; p != nil {
		last = p.Usage
	}
	if last == nil {
		return
	}
	if usage.Bytes == nil && last.Bytes != nil {
		b := *last.Bytes
		usage.Bytes = &b
	}
	if usage.Inodes == nil && last.Inodes != nil {
		i := *last.Inodes
		usage.Inodes = &i
	}
	if usage.Condition == nil && last.Condition != nil {
		c := *last.Condition
		usage.Condition = &c
	}
}
