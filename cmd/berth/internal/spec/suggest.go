package spec

import (
	"fmt"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// suggest is structs.SuggestName: one "did you mean" rule for the spec
// and the servers' checks of what arrives as JSON.
func suggest(name string, known []string) string { return structs.SuggestName(name, known) }

// quoteList renders names as "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
