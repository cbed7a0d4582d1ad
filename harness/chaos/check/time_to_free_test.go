package check

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestTimeToFree(t *testing.T) {
	healed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	after := func(d time.Duration) time.Time { return healed.Add(d) }
	cases := []struct {
		name       string
		claims     []ClaimRelease
		max        time.Duration
		slowest    string
		notFreed   int
		violations int
	}{
		{
			name: "all freed within the bound",
			claims: []ClaimRelease{
				{VolumeID: "vol-1", AllocID: "early", Stopped: after(-2 * time.Second), Healed: healed, Freed: after(-time.Second)}, // freed during the fault
				{VolumeID: "vol-1", AllocID: "a", Stopped: after(-time.Minute), Healed: healed, Freed: after(3 * time.Second)},
				{VolumeID: "vol-2", AllocID: "late-stop", Stopped: after(time.Minute), Healed: healed, Freed: after(time.Minute + 4*time.Second)},
			},
			max:     4 * time.Second,
			slowest: "late-stop",
		},
		{
			name: "one over the bound, one never freed",
			claims: []ClaimRelease{
				{VolumeID: "vol-1", AllocID: "a", Healed: healed, Freed: after(2 * time.Second)},
				{VolumeID: "vol-1", AllocID: "slow", Healed: healed, Freed: after(15 * time.Second)},
				{VolumeID: "vol-3", AllocID: "no-fault", Stopped: after(-time.Hour), Freed: after(-time.Hour + time.Second)},
				{VolumeID: "vol-2", AllocID: "leaked", Healed: healed},
			},
			max:        15 * time.Second,
			slowest:    "slow",
			notFreed:   1,
			violations: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := TimeToFree(tc.claims, 10*time.Second)
			must.EqOp(t, tc.max, rep.Max)
			must.EqOp(t, tc.slowest, rep.Slowest.AllocID)
			must.EqOp(t, tc.notFreed, rep.NotFreed)
			must.SliceLen(t, tc.violations, rep.Violations, must.Sprint(rep.Violations))
		})
	}
}

func TestTimeToFree_NoBound(t *testing.T) {
	healed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := TimeToFree([]ClaimRelease{{AllocID: "a", Healed: healed, Freed: healed.Add(time.Hour)}}, 0)
	must.EqOp(t, time.Hour, rep.Max)
	must.SliceEmpty(t, rep.Violations)
}
