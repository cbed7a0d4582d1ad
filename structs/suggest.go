package structs

import (
	"strings"

	"github.com/agext/levenshtein"
)

// SuggestName returns the known name closest to name, or "" when none is
// close enough to be a plausible slip, whatever the case: at most two
// edits away (three for a name longer than 8), or, for a name of at least
// 4 letters, a known name it begins or that begins it ("entry" for
// "entrypoint"). The one "did you mean" rule of the job spec parser, the
// servers' checks and the ACL policy parser.
func SuggestName(name string, known []string) string {
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range known {
		lk := strings.ToLower(k)
		d := levenshtein.Distance(lower, lk, nil)
		if len(lower) >= 4 && (strings.HasPrefix(lk, lower) || strings.HasPrefix(lower, lk)) {
			d = min(d, 1)
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	limit := 2
	if len(name) > 8 {
		limit = 3
	}
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	return ""
}
