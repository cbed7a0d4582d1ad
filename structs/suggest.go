package structs

import "strings"

// suggestName returns the known name closest to name, or "" when none is
// close enough to be a plausible typo: the job spec parser's rule, for the
// servers' messages about what arrives as JSON.
func suggestName(name string, known []string) string {
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range known {
		d := editDistance(lower, k)
		// "entry" for "entrypoint": a name cut short is a likely slip too.
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

// editDistance is the Levenshtein distance between a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
