package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// rows counts the rows InspectSnapshot reports for each table.
func rows(info *SnapshotInfo) map[string]int {
	out := map[string]int{}
	for _, c := range info.Tables {
		out[c.Table] = c.Rows
	}
	return out
}

func TestInspectSnapshot_CountsEveryTable(t *testing.T) {
	src := newFSM(t)
	scenarios := goldenScenarios()
	applyAll(t, src, append(append(scenarios["plan_then_client_completes"], scenarios["acl"]...), scenarios["root_keys"]...))

	info, err := InspectSnapshot(bytes.NewReader(persist(t, src)))
	must.NoError(t, err)
	got := rows(info)
	for table, want := range map[string]int{
		state.TableNodes:       1,
		state.TableJobs:        1,
		state.TableAllocs:      1,
		state.TableCSIPlugins:  1,
		state.TableCSIVolumes:  1,
		state.TableRootKeys:    2,
		state.TableACLPolicies: 1, // deploy was deleted
		state.TableACLTokens:   1, // the deployer's was deleted
	} {
		must.EqOp(t, want, got[table], must.Sprintf("table %s", table))
	}

	// Every table the stream persists is listed, in the stream's order,
	// the index table aside.
	var names []string
	for _, c := range info.Tables {
		names = append(names, c.Table)
	}
	var want []string
	for _, tb := range snapshotTables {
		if tb.table != state.TableIndex {
			want = append(want, tb.table)
		}
	}
	must.Eq(t, want, names)

	latest, err := src.State().LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, latest, info.LatestIndex)
}

// TestInspectSnapshot_RefusesWhatRestoreRefuses: the same streams, the
// same answer: a server relies on it before raft's Restore, which may
// not fail on the leader.
func TestInspectSnapshot_RefusesWhatRestoreRefuses(t *testing.T) {
	src := newFSM(t)
	applyAll(t, src, goldenScenarios()["node_plugin_volume_claim"])
	good := persist(t, src)
	// A node row whose ID is empty decodes but memdb refuses it.
	noID, err := structs.Encode(structs.MessageType(NodeSnapshot), &structs.Node{Name: "no-id"})
	must.NoError(t, err)

	cases := map[string][]byte{
		"empty":          {},
		"unknown format": append([]byte{0x09}, good[1:]...),
		"truncated":      good[:len(good)/2],
		"unknown record": append(append([]byte{}, good...), 0x7f, 0x80),
		"row without ID": append(append([]byte{}, good...), noID...),
		"good":           good,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, inspectErr := InspectSnapshot(bytes.NewReader(data))
			restoreErr := newFSM(t).Restore(io.NopCloser(bytes.NewReader(data)))
			if name == "good" {
				must.NoError(t, inspectErr)
				must.NoError(t, restoreErr)
				return
			}
			must.Error(t, inspectErr)
			must.Error(t, restoreErr)
			must.EqOp(t, restoreErr.Error(), inspectErr.Error())
		})
	}
}
