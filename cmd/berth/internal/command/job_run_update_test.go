package command

import (
	"bytes"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestReplacingWaits: a group whose placements wait for the allocations
// they replace says so in the grammar of its count; other failures are
// not this line's.
func TestReplacingWaits(t *testing.T) {
	var out bytes.Buffer
	m := &meta{stdout: &out}
	m.replacingWaits([]*structs.PlacementFailure{
		{TaskGroup: "one", Missing: 1, Replacing: true},
		{TaskGroup: "three", Missing: 3, Replacing: true},
		{TaskGroup: "failed", Missing: 2},
		nil,
	})
	must.EqOp(t, `    Group "one": 1 allocation waits for the one it replaces to stop and free its claims
    Group "three": 3 allocations wait for the ones they replace to stop and free their claims
`, out.String())
}
