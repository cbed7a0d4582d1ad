package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestAllocIndex_AndSourceFor(t *testing.T) {
	for name, want := range map[string]int{"job.web[0]": 0, "web.db[12]": 12} {
		idx, ok := AllocIndex(name)
		must.True(t, ok)
		must.EqOp(t, want, idx)
	}
	for _, bad := range []string{"web.db", "web.db[]", "web.db[x]", "web.db[-1]", "web.db[3", "web]"} {
		_, ok := AllocIndex(bad)
		must.False(t, ok, must.Sprint(bad))
	}
	must.EqOp(t, "data", (&VolumeRequest{Source: "data"}).SourceFor(3))
	must.EqOp(t, "data[3]", (&VolumeRequest{Source: "data", PerAlloc: true}).SourceFor(3))
}
