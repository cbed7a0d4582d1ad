package structs

import (
	"encoding/json"
	"testing"

	"github.com/shoenig/test/must"
)

// TestAllocStop_Legacy: a stop written before stops carried a reason
// gets the one its words of then meant; one with a reason, or with other
// words, is left as it is.
func TestAllocStop_Legacy(t *testing.T) {
	cases := []struct {
		name, words string
		reason      AllocStopReason
		version     uint64
	}{
		{"update", "replaced by job version 7", AllocStopUpdate, 7},
		{"count", "count lowered to 2", AllocStopCount, 0},
		{"drain", "stopped to drain node node-1", AllocStopDrain, 0},
		{"job stop", "its job was stopped", AllocStopJob, 0},
		{"update without a number", "replaced by job version seven", AllocStopNone, 0},
		{"count without a number", "count lowered to two", AllocStopNone, 0},
		{"drain without a node", "stopped to drain node ", AllocStopNone, 0},
		{"other words", "moved for maintenance", AllocStopNone, 0},
		{"no words", "", AllocStopNone, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AllocStop{AllocID: "a1", Description: c.words}.Legacy()
			must.Eq(t, AllocStop{AllocID: "a1", Description: c.words, Reason: c.reason, ReplacedByVersion: c.version}, got)
		})
	}
	t.Run("a reason is kept, whatever the words", func(t *testing.T) {
		s := AllocStop{Description: "replaced by job version 7", Reason: AllocStopCount}
		must.Eq(t, s, s.Legacy())
	})
}

// TestAllocStop_StopFor: each stop carries its reason beside its words,
// and an update's the version that replaces the allocation.
func TestAllocStop_StopFor(t *testing.T) {
	must.Eq(t, AllocStop{AllocID: "a1", Reason: AllocStopUpdate, ReplacedByVersion: 3, Description: UpdateDescription(3)},
		StopForUpdate("a1", 3))
	c := StopForCount("a2", 1)
	must.EqOp(t, AllocStopCount, c.Reason)
	must.EqOp(t, "a2", c.AllocID)
	must.StrContains(t, c.Description, "1")
	d := StopForDrain("node-1")
	must.EqOp(t, AllocStopDrain, d.Reason)
	must.EqOp(t, DrainDescription("node-1"), d.Description)
	must.EqOp(t, AllocStopJob, StopForJobStop().Reason)
	must.NotEq(t, "", StopForJobStop().Description)
}

// TestAllocStopReason_JSON: the API writes the reason's name and reads a
// name or a number; an unknown name is an error naming the known ones.
func TestAllocStopReason_JSON(t *testing.T) {
	for r := AllocStopNone; r <= AllocStopDrain; r++ {
		b, err := json.Marshal(r)
		must.NoError(t, err)
		var back AllocStopReason
		must.NoError(t, json.Unmarshal(b, &back))
		must.EqOp(t, r, back)
	}
	b, err := json.Marshal(&Allocation{ID: "a1", StopReason: AllocStopUpdate, ReplacedByVersion: 2})
	must.NoError(t, err)
	must.StrContains(t, string(b), `"StopReason":"update","ReplacedByVersion":2`)
	b, err = json.Marshal(&Allocation{ID: "a1"})
	must.NoError(t, err)
	must.StrNotContains(t, string(b), "StopReason", must.Sprint("a running allocation has none"))

	var r AllocStopReason
	must.NoError(t, json.Unmarshal([]byte("4"), &r))
	must.EqOp(t, AllocStopDrain, r)
	err = json.Unmarshal([]byte(`"evicted"`), &r)
	must.ErrorContains(t, err, `unknown reason "evicted"`)
	must.ErrorContains(t, err, "drain")
	must.EqOp(t, "AllocStopReason(9)", AllocStopReason(9).String())
}

// TestAllocation_StopReason_Msgpack: the reason and version survive a
// raft entry or snapshot row, and an entry or row written before they
// existed decodes, without them.
func TestAllocation_StopReason_Msgpack(t *testing.T) {
	in := &PlanApplyRequest{
		Allocs: []*Allocation{{ID: "a1", DesiredStatus: AllocDesiredStatusStop, DesiredDescription: "reworded",
			StopReason: AllocStopUpdate, ReplacedByVersion: 5}},
		Stops: []AllocStop{StopForUpdate("a0", 5)},
	}
	buf, err := Encode(PlanApplyRequestType, in)
	must.NoError(t, err)
	var out PlanApplyRequest
	must.NoError(t, Decode(buf[1:], &out))
	must.Eq(t, in.Allocs, out.Allocs)
	must.Eq(t, in.Stops, out.Stops)

	// A plan and an allocation as a server before these fields wrote them.
	type oldStop struct{ AllocID, Description string }
	type oldAllocation struct {
		ID                 string
		DesiredStatus      string
		DesiredDescription string
	}
	type oldPlan struct {
		Allocs []*oldAllocation
		Stops  []oldStop
	}
	buf, err = Encode(PlanApplyRequestType, &oldPlan{
		Allocs: []*oldAllocation{{ID: "a2", DesiredStatus: AllocDesiredStatusStop, DesiredDescription: "replaced by job version 1"}},
		Stops:  []oldStop{{AllocID: "a3", Description: "replaced by job version 1"}},
	})
	must.NoError(t, err)
	var old PlanApplyRequest
	must.NoError(t, Decode(buf[1:], &old))
	must.Eq(t, []AllocStop{{AllocID: "a3", Description: "replaced by job version 1"}}, old.Stops)
	must.SliceLen(t, 1, old.Allocs)
	must.EqOp(t, "a2", old.Allocs[0].ID)
	must.EqOp(t, AllocStopNone, old.Allocs[0].StopReason)
	must.EqOp(t, uint64(0), old.Allocs[0].ReplacedByVersion)
}

// TestNextJobVersion: a new job is version 0, the same spec keeps the
// stored version (a stopped job's too), a changed one is the next.
func TestNextJobVersion(t *testing.T) {
	j := validJob()
	v, isNew := NextJobVersion(nil, j)
	must.EqOp(t, uint64(0), v)
	must.True(t, isNew)

	stored := j.Copy()
	stored.Version, stored.Stop = 4, true
	v, isNew = NextJobVersion(stored, j)
	must.EqOp(t, uint64(4), v)
	must.False(t, isNew)

	k := j.Copy()
	k.TaskGroups[0].Count = 3
	v, isNew = NextJobVersion(stored, k)
	must.EqOp(t, uint64(5), v)
	must.True(t, isNew)
}

// TestLookupTaskGroup: a nil job, a nil allocation, a job without the
// group and a nil group entry all find none.
func TestLookupTaskGroup(t *testing.T) {
	j := validJob()
	name := j.TaskGroups[0].Name
	must.EqOp(t, j.TaskGroups[0], j.LookupTaskGroup(name))
	must.Nil(t, j.LookupTaskGroup("nope"))
	must.Nil(t, (*Job)(nil).LookupTaskGroup(name))

	a := &Allocation{TaskGroup: name, Job: j}
	must.EqOp(t, j.TaskGroups[0], a.LookupTaskGroup())
	must.Nil(t, (&Allocation{TaskGroup: name}).LookupTaskGroup())
	must.Nil(t, (*Allocation)(nil).LookupTaskGroup())
	withNil := j.Copy()
	withNil.TaskGroups = append([]*TaskGroup{nil}, withNil.TaskGroups...)
	must.NotNil(t, (&Allocation{TaskGroup: name, Job: withNil}).LookupTaskGroup())
}

func TestShortIDAndPlural(t *testing.T) {
	must.EqOp(t, "0123abcd", ShortID("0123abcd-ef45-6789"))
	must.EqOp(t, "abc", ShortID("abc"))
	must.EqOp(t, "", Plural(1))
	must.EqOp(t, "s", Plural(0))
	must.EqOp(t, "s", Plural(2))
}
