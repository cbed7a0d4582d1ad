package command

import (
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
)

// TestAllPages_FoundOnEveryPage: found sees every page, the last one too
// (a volume on the last or only page of a plugin's list was reported as
// "not listed" when it was not), and ends the walk at the first hit.
func TestAllPages_FoundOnEveryPage(t *testing.T) {
	pages := map[string][]int{"": {1, 2}, "p2": {3, 4}, "p3": {5}}
	next := map[string]string{"": "p2", "p2": "p3"}
	fetch := func(tok string) ([]int, string, error) { return pages[tok], next[tok], nil }
	// The item looked for, and how many items were read by the page it is on.
	for want, read := range map[int]int{2: 2, 4: 4, 5: 5} {
		t.Run(strconv.Itoa(want), func(t *testing.T) {
			var seen []int
			got, err := allPages("", fetch, func(items []int) bool {
				seen = append(seen, items...)
				for _, i := range items {
					if i == want {
						return true
					}
				}
				return false
			})
			must.NoError(t, err)
			must.SliceContains(t, seen, want)
			must.SliceLen(t, read, got, must.Sprint("the walk stops at the page of the hit"))
		})
	}
	only := map[string][]int{"": {7}}
	var sawOnly bool
	_, err := allPages("", func(tok string) ([]int, string, error) { return only[tok], "", nil },
		func(items []int) bool { sawOnly = len(items) == 1 && items[0] == 7; return sawOnly })
	must.NoError(t, err)
	must.True(t, sawOnly, must.Sprint("found saw the only page"))
}
