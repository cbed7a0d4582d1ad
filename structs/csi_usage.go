package structs

import (
	"fmt"
	"time"
)

// CSIVolumeUsage is what a node plugin last said about a volume it
// publishes for one allocation: its usage (NodeGetVolumeStats, where the
// plugin offers GET_VOLUME_STATS) and its condition (NodeGetVolumeHealth,
// where it offers GET_VOLUME_HEALTH). A claim keeps its allocation's.
type CSIVolumeUsage struct {
	// Bytes and Inodes are nil when the plugin did not report them.
	Bytes  *CSIUsageAmount `json:",omitempty"`
	Inodes *CSIUsageAmount `json:",omitempty"`
	// Condition is nil when the plugin reports no health.
	Condition *CSIVolumeCondition `json:",omitempty"`
	// Error is why the last collection failed ("" when it did not); the
	// figures are then the last ones the client collected, if any.
	Error string `json:",omitempty"`
	// CollectedAt is when the client collected the figures as they are:
	// a later collection that finds them the same is not sent again, so
	// it is the time of the last change, not of the last collection.
	CollectedAt time.Time
}

// CSIUsageAmount is one unit's figures (bytes or inodes); 0 where the
// plugin did not say.
type CSIUsageAmount struct {
	Used      int64
	Available int64
	Total     int64
}

// CSIVolumeCondition is a volume's health as its node plugin reports it.
type CSIVolumeCondition struct {
	Abnormal bool
	// Message says what is wrong, as the plugin put it ("" when normal).
	Message string `json:",omitempty"`
}

// Bounds of a usage report, so that one plugin's answer cannot grow a
// volume row without limit.
const (
	MaxUsageMessage = 1024
	// MaxUsageReports is how many usage reports one node update carries;
	// the rest go in the next.
	MaxUsageReports = 256
)

// Copy returns a deep copy.
func (u *CSIVolumeUsage) Copy() *CSIVolumeUsage {
	if u == nil {
		return nil
	}
	c := *u
	if u.Bytes != nil {
		b := *u.Bytes
		c.Bytes = &b
	}
	if u.Inodes != nil {
		i := *u.Inodes
		c.Inodes = &i
	}
	if u.Condition != nil {
		cond := *u.Condition
		c.Condition = &cond
	}
	return &c
}

// SameFigures reports whether u and o say the same, whenever collected.
func (u *CSIVolumeUsage) SameFigures(o *CSIVolumeUsage) bool {
	if u == nil || o == nil {
		return u == o
	}
	return samePtr(u.Bytes, o.Bytes) && samePtr(u.Inodes, o.Inodes) &&
		samePtr(u.Condition, o.Condition) && u.Error == o.Error
}

func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// IsAbnormal reports whether the plugin said the volume is abnormal.
func (u *CSIVolumeUsage) IsAbnormal() bool {
	return u != nil && u.Condition != nil && u.Condition.Abnormal
}

// Validate refuses figures no plugin can mean (negative) and texts past
// MaxUsageMessage.
func (u *CSIVolumeUsage) Validate() error {
	if u == nil {
		return fmt.Errorf("no usage")
	}
	for _, a := range []struct {
		unit string
		amt  *CSIUsageAmount
	}{{"bytes", u.Bytes}, {"inodes", u.Inodes}} {
		if a.amt != nil && (a.amt.Used < 0 || a.amt.Available < 0 || a.amt.Total < 0) {
			return fmt.Errorf("%s figures are negative (used %d, available %d, total %d)", a.unit, a.amt.Used, a.amt.Available, a.amt.Total)
		}
	}
	if len(u.Error) > MaxUsageMessage {
		return fmt.Errorf("the error is %d bytes, more than %d", len(u.Error), MaxUsageMessage)
	}
	if u.Condition != nil && len(u.Condition.Message) > MaxUsageMessage {
		return fmt.Errorf("the condition message is %d bytes, more than %d", len(u.Condition.Message), MaxUsageMessage)
	}
	return nil
}

// CSIVolumeUsageReport is a client's report of one volume's usage where
// one of its allocations uses it; it rides the node's fingerprint update.
// The servers find the claim from the allocation (its namespace and its
// node, which must be the reporting node).
type CSIVolumeUsageReport struct {
	AllocID  string
	VolumeID string
	Usage    *CSIVolumeUsage
}

// Truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:max(cut, 0)] + mark
}
