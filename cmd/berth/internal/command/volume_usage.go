package command

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
)

// volumeUsage lists what the node plugins last reported of the volume
// where its claims' allocations use it: used and total bytes, inodes,
// condition, and when it was collected. Nothing when no claim has a
// report (a plugin without GET_VOLUME_STATS, or none collected yet).
func (m *meta) volumeUsage(v *structs.CSIVolume, verbose bool) {
	var rows [][]string
	for _, c := range v.SortedClaims() {
		if c == nil || c.Usage == nil {
			continue
		}
		u := c.Usage
		used, capacity, inodes := "<unknown>", "<unknown>", "<unknown>"
		if u.Bytes != nil {
			used, capacity = usedOf(u.Bytes.Used, u.Bytes.Total), humanBytes(u.Bytes.Total)
		}
		if u.Inodes != nil {
			inodes = fmt.Sprintf("%d of %d", u.Inodes.Used, u.Inodes.Total)
		}
		rows = append(rows, []string{shortID(c.NodeID, verbose), shortID(c.AllocID, verbose), used, capacity, inodes,
			conditionOf(u), formatTime(u.CollectedAt)})
	}
	if len(rows) == 0 {
		return
	}
	section(m.stdout, "Usage")
	table(m.stdout, []string{"Node ID", "Alloc ID", "Used", "Capacity", "Inodes", "Condition", "Collected"}, rows)
}

// usedOf is a used figure with its share of the total.
func usedOf(used, total int64) string {
	s := humanBytes(used)
	if used == 0 {
		s = "0 B"
	}
	if total > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*float64(used)/float64(total))
	}
	return s
}

// conditionOf says the condition, or why it is not known.
func conditionOf(u *structs.CSIVolumeUsage) string {
	switch {
	case u.Error != "":
		return "collection failed: " + oneLine(u.Error)
	case u.Condition == nil:
		return "<not reported>"
	case u.Condition.Abnormal:
		return "abnormal: " + oneLine(u.Condition.Message)
	}
	return "normal"
}
