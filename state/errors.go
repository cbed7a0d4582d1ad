package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// Every error a StateStore method returns is a *structs.Error: callers test
// its code with errors.Is(err, structs.ErrNotFound) and friends, and its
// message names the object and says what to do.

func errBadRequest(format string, args ...any) error {
	return structs.NewError(structs.CodeBadRequest, format, args...)
}

func errNotFound(format string, args ...any) error {
	return structs.NewError(structs.CodeNotFound, format, args...)
}

func errConflict(format string, args ...any) error {
	return structs.NewError(structs.CodeConflict, format, args...)
}

// errInternal reports a failure of memdb itself (a broken index, a bad
// table name): a bug, not a user error.
func errInternal(op string, err error) error {
	return structs.NewError(structs.CodeInternal, "state: %s: %v", op, err)
}

// quoteList renders names as "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// sortedKeys returns the keys of a map, sorted, so messages are
// deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plural picks the singular or plural form for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
