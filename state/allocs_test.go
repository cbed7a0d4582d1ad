package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_UpsertAllocs(t *testing.T) {
	s := statetest.New(t)
	a := statetest.Alloc("a1", "n1")
	a.Namespace = ""
	upsertAllocs(t, s, 10, a, statetest.Alloc("a2", "n2"))
	must.Eq(t, "", a.Namespace, must.Sprint("the caller's alloc must not be changed"))

	update := statetest.Alloc("a1", "n1")
	update.ClientStatus = structs.AllocClientStatusComplete
	upsertAllocs(t, s, 11, update)

	got, err := s.AllocByID(nil, "a1")
	must.NoError(t, err)
	must.Eq(t, structs.DefaultNamespace, got.Namespace)
	must.Eq(t, uint64(10), got.CreateIndex)
	must.Eq(t, uint64(11), got.ModifyIndex)
	must.True(t, got.TerminalStatus())
	must.Eq(t, uint64(11), mustIndex(t, s, state.TableAllocs))
}

func TestStateStore_UpsertAllocs_Invalid(t *testing.T) {
	cases := []struct {
		name   string
		allocs []*structs.Allocation
	}{
		{"nil alloc after a good one", []*structs.Allocation{statetest.Alloc("a1", "n1"), nil}},
		{"missing id", []*structs.Allocation{statetest.Alloc("a1", "n1"), statetest.Alloc("", "n1")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			mustCode(t, structs.ErrBadRequest, s.UpsertAllocs(10, tc.allocs))
			got, err := s.AllocByID(nil, "a1")
			must.NoError(t, err)
			must.Nil(t, got, must.Sprint("a failed upsert writes nothing"))
			must.Eq(t, uint64(0), mustIndex(t, s, state.TableAllocs))
		})
	}
}

func TestStateStore_AllocsBy(t *testing.T) {
	s := statetest.New(t)
	other := statetest.Alloc("a4", "n1")
	other.JobID = "batch"
	prod := statetest.Alloc("a5", "n2")
	prod.Namespace = "prod"
	unplaced := statetest.Alloc("a6", "")
	upsertAllocs(t, s, 10,
		statetest.Alloc("a1", "n1"), statetest.Alloc("a2", "n1"), statetest.Alloc("a3", "n2"),
		other, prod, unplaced,
	)
	ids := func(allocs []*structs.Allocation) []string {
		out := []string{}
		for _, a := range allocs {
			out = append(out, a.ID)
		}
		return out
	}
	all := collect[structs.Allocation](t)
	cases := []struct {
		name string
		got  []*structs.Allocation
		want []string
	}{
		{"node n1", all(s.AllocsByNode(nil, "n1")), []string{"a1", "a2", "a4"}},
		{"node n2", all(s.AllocsByNode(nil, "n2")), []string{"a3", "a5"}},
		{"node prefix is not a match", all(s.AllocsByNode(nil, "n")), []string{}},
		{"job", all(s.AllocsByJob(nil, structs.DefaultNamespace, statetest.JobID)), []string{"a1", "a2", "a3", "a6"}},
		{"job, namespace defaults", all(s.AllocsByJob(nil, "", "batch")), []string{"a4"}},
		{"job in prod", all(s.AllocsByJob(nil, "prod", statetest.JobID)), []string{"a5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, ids(tc.got))
		})
	}
}
