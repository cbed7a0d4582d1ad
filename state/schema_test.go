package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/shoenig/test/must"
)

func TestSchema_Validate(t *testing.T) {
	must.NoError(t, state.Schema().Validate())
}

func TestSchema_TablesListsEveryTableOnce(t *testing.T) {
	schema := state.Schema()
	must.SliceLen(t, len(schema.Tables), state.Tables)
	seen := map[string]bool{}
	for _, table := range state.Tables {
		must.MapContainsKey(t, schema.Tables, table)
		must.False(t, seen[table], must.Sprintf("table %q listed twice", table))
		seen[table] = true
	}
	// The index table restores first, so a restored store knows its
	// indexes before any row of data.
	must.Eq(t, state.TableIndex, state.Tables[0])
}

func TestSchema_EveryTableHasIDIndex(t *testing.T) {
	for name, table := range state.Schema().Tables {
		idx, ok := table.Indexes["id"]
		must.True(t, ok, must.Sprintf("table %q has no id index", name))
		must.True(t, idx.Unique, must.Sprintf("table %q: id index must be unique", name))
	}
}
