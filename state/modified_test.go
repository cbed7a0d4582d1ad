package state_test

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestStateStore_ModifiedAfter: the reads of rows written after an index
// return those alone, oldest write first, and their watch fires on the
// table's next write.
func TestStateStore_ModifiedAfter(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"), statetest.Node("n2"))
	upsertNodes(t, s, 20, statetest.Node("n3"))
	must.NoError(t, s.UpdateNodeStatus(30, "n1", structs.NodeStatusDown, 1, nil))
	must.NoError(t, s.ApplyPlan(40, &structs.PlanApplyRequest{Job: statetest.Job("j1")}))
	must.NoError(t, s.ApplyPlan(50, &structs.PlanApplyRequest{Job: statetest.Job("j2"),
		Allocs: []*structs.Allocation{statetest.Alloc("a1", "n2"), statetest.Alloc("a2", "n3")}}))
	must.NoError(t, s.UpdateAllocsFromClient(60, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}, time.Unix(1, 0)))

	ids := func(iter memdb.ResultIterator, err error) []string {
		must.NoError(t, err)
		out := []string{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			switch r := raw.(type) {
			case *structs.Node:
				out = append(out, r.ID)
			case *structs.Job:
				out = append(out, r.ID)
			case *structs.Allocation:
				out = append(out, r.ID)
			}
		}
		return out
	}
	must.Eq(t, []string{"n2", "n3", "n1"}, ids(s.NodesModifiedAfter(nil, 0)), must.Sprint("n1 was written last, at 30"))
	must.Eq(t, []string{"n3", "n1"}, ids(s.NodesModifiedAfter(nil, 10)), must.Sprint("by write, oldest first"))
	must.Eq(t, []string{}, ids(s.NodesModifiedAfter(nil, 30)))
	must.Eq(t, []string{"j2"}, ids(s.JobsModifiedAfter(nil, 40)))
	must.Eq(t, []string{"a2", "a1"}, ids(s.AllocsModifiedAfter(nil, 49)))
	must.Eq(t, []string{"a1"}, ids(s.AllocsModifiedAfter(nil, 50)))

	ws := memdb.NewWatchSet()
	ids(s.AllocsModifiedAfter(ws, 60))
	must.True(t, ws.Watch(closedTime()), must.Sprint("no write yet"))
	must.NoError(t, s.UpdateAllocsFromClient(70, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusRunning}}, time.Unix(1, 0)))
	must.False(t, ws.Watch(nil), must.Sprint("the next write fires the watch"))
	must.Eq(t, []string{"a2"}, ids(s.AllocsModifiedAfter(nil, 60)))
}

// closedTime is a timeout that has already fired.
func closedTime() <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}
