package check

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// A ClaimSample is one read of a single-writer volume: its write claims
// and the writer allocations seen running at that instant.
type ClaimSample struct {
	At             time.Time
	Server         string // the server read, for the report
	VolumeID       string
	WriteClaims    []string // allocs holding a write claim, taken or being released
	RunningWriters []string // allocs using the volume read-write whose tasks run
}

// SingleWriter reports every stretch of samples in which a single-writer
// volume had two write claims or two running writers. Consecutive samples
// of a volume showing the same allocs are one violation.
func SingleWriter(samples []ClaimSample) []Violation {
	sorted := append([]ClaimSample(nil), samples...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].VolumeID != sorted[j].VolumeID {
			return sorted[i].VolumeID < sorted[j].VolumeID
		}
		return sorted[i].At.Before(sorted[j].At)
	})
	var out []Violation
	claims := stretches{what: "write claims"}
	running := stretches{what: "running writers"}
	for _, s := range sorted {
		out = claims.add(out, s, s.WriteClaims)
		out = running.add(out, s, s.RunningWriters)
	}
	out = claims.flush(out)
	return running.flush(out)
}

// stretches merges consecutive violating samples of one volume that name
// the same allocs.
type stretches struct {
	what     string
	open     bool
	volumeID string
	allocs   string
	from, to ClaimSample
	reads    int
}

func (st *stretches) add(out []Violation, s ClaimSample, allocs []string) []Violation {
	ids := distinct(allocs)
	if len(ids) < 2 {
		return st.flush(out)
	}
	key := strings.Join(ids, ", ")
	if st.open && st.volumeID == s.VolumeID && st.allocs == key {
		st.to, st.reads = s, st.reads+1
		return out
	}
	out = st.flush(out)
	*st = stretches{what: st.what, open: true, volumeID: s.VolumeID, allocs: key, from: s, to: s, reads: 1}
	return out
}

func (st *stretches) flush(out []Violation) []Violation {
	if !st.open {
		return out
	}
	st.open = false
	return append(out, Violation{
		Check:    "single-writer",
		VolumeID: st.volumeID,
		Detail: fmt.Sprintf("%d %s (%s) from %s (server %s) to %s (server %s), %d reads",
			len(strings.Split(st.allocs, ", ")), st.what, st.allocs,
			st.from.At.Format(time.RFC3339Nano), st.from.Server,
			st.to.At.Format(time.RFC3339Nano), st.to.Server, st.reads),
	})
}

// distinct returns ids sorted, without repeats or empty strings.
func distinct(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
