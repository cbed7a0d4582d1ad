package check

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestSingleWriter(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cases := []struct {
		name    string
		samples []ClaimSample
		want    []string // the detail of each violation, in order
	}{
		{
			name: "one writer at a time, the same alloc listed twice",
			samples: []ClaimSample{
				{At: at(0), VolumeID: "vol-1", WriteClaims: []string{"a"}, RunningWriters: []string{"a"}},
				{At: at(1), VolumeID: "vol-1", WriteClaims: []string{"a", "a"}, RunningWriters: []string{"a"}},
				{At: at(2), VolumeID: "vol-1"},
				{At: at(3), VolumeID: "vol-1", WriteClaims: []string{"b"}, RunningWriters: []string{"b"}},
				{At: at(3), VolumeID: "vol-2", WriteClaims: []string{"a"}, RunningWriters: []string{"a"}},
			},
		},
		{
			name: "two running writers for three reads, then two claims",
			samples: []ClaimSample{
				{At: at(2), Server: "s2", VolumeID: "vol-1", WriteClaims: []string{"b"}, RunningWriters: []string{"b", "a"}},
				{At: at(0), Server: "s1", VolumeID: "vol-1", WriteClaims: []string{"a"}, RunningWriters: []string{"a"}},
				{At: at(1), Server: "s1", VolumeID: "vol-1", WriteClaims: []string{"b"}, RunningWriters: []string{"a", "b"}},
				{At: at(3), Server: "s3", VolumeID: "vol-1", WriteClaims: []string{"b"}, RunningWriters: []string{"a", "b"}},
				{At: at(4), Server: "s1", VolumeID: "vol-1", WriteClaims: []string{"c", "b"}, RunningWriters: []string{"b"}},
			},
			want: []string{
				"2 running writers (a, b) from 2026-01-02T03:04:06Z (server s1) to 2026-01-02T03:04:08Z (server s3), 3 reads",
				"2 write claims (b, c) from 2026-01-02T03:04:09Z (server s1) to 2026-01-02T03:04:09Z (server s1), 1 reads",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SingleWriter(tc.samples)
			var details []string
			for _, v := range got {
				must.EqOp(t, "single-writer", v.Check)
				must.EqOp(t, "vol-1", v.VolumeID)
				details = append(details, v.Detail)
			}
			must.Eq(t, tc.want, details)
		})
	}
}
