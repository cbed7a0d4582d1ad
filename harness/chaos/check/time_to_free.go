package check

import (
	"fmt"
	"time"
)

// A ClaimRelease is one claim whose allocation stopped, failed or was lost,
// and when the servers were seen to free it.
type ClaimRelease struct {
	VolumeID string
	AllocID  string
	Stopped  time.Time // when the alloc was seen stopped, failed or lost
	Healed   time.Time // when the last fault before the claim was freed healed; zero: none
	Freed    time.Time // when the claim was first seen freed; zero: never
}

// FreeReport is what TimeToFree found.
type FreeReport struct {
	Max        time.Duration // the longest time to free, from max(heal, stop)
	Slowest    ClaimRelease  // the claim that took Max
	NotFreed   int           // claims never seen freed
	Violations []Violation   // claims over the bound, and claims never freed
}

// TimeToFree measures each claim's time to be freed, from the later of its
// fault's heal and its allocation's stop (a claim freed before either took
// 0), and reports the claims never freed and those that took longer than
// bound (0: no bound).
func TimeToFree(claims []ClaimRelease, bound time.Duration) FreeReport {
	var rep FreeReport
	measured := false
	for _, c := range claims {
		from := c.Healed
		if c.Stopped.After(from) {
			from = c.Stopped
		}
		if c.Freed.IsZero() {
			rep.NotFreed++
			rep.Violations = append(rep.Violations, Violation{
				Check:    "time-to-free",
				VolumeID: c.VolumeID,
				Detail:   fmt.Sprintf("claim of alloc %s was never freed (due from %s)", c.AllocID, from.Format(time.RFC3339Nano)),
			})
			continue
		}
		took := max(c.Freed.Sub(from), 0)
		if !measured || took > rep.Max {
			rep.Max, rep.Slowest, measured = took, c, true
		}
		if bound > 0 && took > bound {
			rep.Violations = append(rep.Violations, Violation{
				Check:    "time-to-free",
				VolumeID: c.VolumeID,
				Detail:   fmt.Sprintf("claim of alloc %s took %s to be freed, over the bound of %s", c.AllocID, took, bound),
			})
		}
	}
	return rep
}
