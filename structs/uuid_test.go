package structs

import (
	"regexp"
	"testing"

	"github.com/shoenig/test/must"
)

// TestNewUUID: a version 4 UUID, different each time.
func TestNewUUID(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := NewUUID()
		must.RegexMatch(t, v4, id)
		must.False(t, seen[id])
		seen[id] = true
	}
}
