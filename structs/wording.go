package structs

import (
	"fmt"
	"strings"
)

// typeName names a config value's type as a person would: "a string",
// "a number", "a list".
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	case []any, []string:
		return "a list"
	case map[string]any, map[string]string:
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// orList renders names as "a", "b" or "c".
func orList(names []string) string { return joinQuoted(names, " or ") }

// andList renders names as a, b and c.
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func joinQuoted(names []string, last string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + last + q[len(q)-1]
}

func didYouMean(s string, known []string) string {
	if sg := SuggestName(s, known); sg != "" {
		return fmt.Sprintf("; did you mean %q?", sg)
	}
	return ""
}

// ShortID is the first 8 characters of an ID (all of a shorter one): how
// the servers' messages name an allocation.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Plural is "s" unless n is 1: fmt.Sprintf("%d node%s", n, Plural(n)).
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
