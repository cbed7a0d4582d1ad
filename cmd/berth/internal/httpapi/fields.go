package httpapi

import (
	"reflect"
	"strings"

	"github.com/agext/levenshtein"
)

// suggestField finds, among the JSON field names anywhere in v's type,
// the one closest to name: at most two edits away (a typo, a wrong
// plural), or else the shortest that ends with it ("CapacityMax" for
// "RequestedCapacityMax"); "" when none is. encoding/json does not say in
// which object the unknown field was, so every object of the body is a
// candidate.
func suggestField(name string, v any) string {
	if name == "" || len(name) > 64 {
		return "" // no field name is that long; and distance costs len(name) times the others'
	}
	names := map[string]bool{}
	collectFields(reflect.TypeOf(v), names, map[reflect.Type]bool{})
	lower := strings.ToLower(name)
	best, bestDist := "", 3
	suffix := ""
	for n := range names {
		ln := strings.ToLower(n)
		if d := editDistance(lower, ln); d < bestDist || d == bestDist && n < best {
			best, bestDist = n, d
		}
		if strings.HasSuffix(ln, lower) && (suffix == "" || len(n) < len(suffix) || len(n) == len(suffix) && n < suffix) {
			suffix = n
		}
	}
	if best == "" {
		return suffix
	}
	return best
}

// collectFields adds the JSON names of t's struct fields, and of the
// structs it holds, to names.
func collectFields(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case f.Anonymous && tag == "":
			collectFields(f.Type, names, seen)
			continue
		case !f.IsExported():
			continue
		case tag != "":
			names[tag] = true
		default:
			names[f.Name] = true
		}
		collectFields(f.Type, names, seen)
	}
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int { return levenshtein.Distance(a, b, nil) }
