package spec

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
)

// suggest returns the known name closest to name, or "" when none is close
// enough to be a plausible typo or a name cut short.
func suggest(name string, known []string) string {
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range known {
		d := editDistance(lower, k)
		// "plugin" for "plugin_id": a cut-short name is a likely slip too.
		if len(lower) >= 4 && (strings.HasPrefix(k, lower) || strings.HasPrefix(lower, k)) {
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

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int { return levenshtein.Distance(a, b, nil) }

// quoteList renders names as "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
