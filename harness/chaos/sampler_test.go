package chaos

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/harness/chaos/check"
	"github.com/berth-csi/berth/structs"
)

// TestSampler_Releases follows two claims through reads: one whose alloc
// is seen ended before its claim goes, one that goes between two reads
// without its alloc seen ended; a third is still held by a running alloc.
func TestSampler_Releases(t *testing.T) {
	s := &Sampler{claims: map[claimKey]*claimTrack{}}
	vol := JobVolume{ID: "writer-0", Writer: true}
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	claims := func(ids ...string) *structs.CSIVolume {
		v := &structs.CSIVolume{WriteClaims: map[string]*structs.CSIVolumeClaim{}, PastClaims: map[string]*structs.CSIVolumeClaim{}}
		for _, id := range ids {
			v.WriteClaims[id] = &structs.CSIVolumeClaim{AllocID: id, Mode: structs.CSIVolumeClaimWrite}
		}
		return v
	}
	s.record(at(0), vol, claims("a", "b", "c"), nil)
	s.record(at(1*time.Second), vol, claims("a", "b", "c"), map[string]bool{"a": true}) // a ended
	s.record(at(2*time.Second), vol, claims("a", "c"), nil)                             // b freed unseen
	s.record(at(5*time.Second), vol, claims("c"), nil)                                  // a freed

	faults := []Fault{{Injected: at(-time.Minute), Healed: at(-30 * time.Second)}, {Injected: at(3 * time.Second), Healed: at(4 * time.Second)}}
	rel := s.Releases(faults)
	must.Eq(t, []check.ClaimRelease{
		{VolumeID: "writer-0", AllocID: "a", Stopped: at(time.Second), Healed: at(4 * time.Second), Freed: at(5 * time.Second)},
		{VolumeID: "writer-0", AllocID: "b", Stopped: at(time.Second), Healed: at(-30 * time.Second), Freed: at(2 * time.Second)},
	}, rel)
	rep := check.TimeToFree(rel, 0)
	must.EqOp(t, time.Second, rep.Max, must.Sprint("a: from the heal at +4s to +5s; b: from its last sighting at +1s to +2s"))
}

func TestWriteClaims_CountsReleasingWriters(t *testing.T) {
	v := &structs.CSIVolume{
		WriteClaims: map[string]*structs.CSIVolumeClaim{"new": {Mode: structs.CSIVolumeClaimWrite}},
		PastClaims: map[string]*structs.CSIVolumeClaim{
			"old":    {Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateUnpublishing},
			"reader": {Mode: structs.CSIVolumeClaimRead},
		},
	}
	got := writeClaims(v)
	must.SliceContainsAll(t, []string{"new", "old"}, got)
}
