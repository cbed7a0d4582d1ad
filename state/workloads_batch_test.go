package state_test

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestStateStore_UpdateAllocsFromClientBatch: each client report is all
// or nothing on its own, answered with its own error, applied in order
// (a later report sees an earlier one's write), and a reader woken by the
// batch sees every applied report of its index at once, never part of it.
func TestStateStore_UpdateAllocsFromClientBatch(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	report := func(allocs ...*structs.Allocation) structs.AllocClientUpdateRequest {
		return structs.AllocClientUpdateRequest{Allocs: allocs, Timestamp: at.UnixNano()}
	}
	status := func(id, st string) *structs.Allocation { return &structs.Allocation{ID: id, ClientStatus: st} }
	running := structs.AllocClientStatusRunning

	for round := range 20 {
		s := claimWorld(t)
		must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "a1")}}))
		b1Before, err := s.AllocByID(nil, "b1")
		must.NoError(t, err)
		ws := memdb.NewWatchSet()
		_, err = s.AllocByID(ws, "a1")
		must.NoError(t, err)

		reqs := []structs.AllocClientUpdateRequest{
			report(status("a1", structs.AllocClientStatusComplete)), // releases its claim on snw
			report(&structs.Allocation{ID: "a2", ClientStatus: running,
				TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning}}}),
			report(status("b1", structs.AllocClientStatusFailed), &structs.Allocation{}), // no ID: b1 is not written either
			report(status("no-such-alloc", running)),                                     // skipped: not an error
			report(nil),
			report(&structs.Allocation{ID: "a2", ClientDescription: "later",
				TaskStates: map[string]*structs.TaskState{"sidecar": {State: structs.TaskStateRunning}}}),
		}

		type view struct {
			applied  int
			released bool
		}
		seen := make(chan view, 1)
		go func() {
			ws.Watch(nil)
			var v view
			for _, id := range []string{"a1", "a2"} {
				if a, _ := s.AllocByID(nil, id); a != nil && a.ModifyIndex == 20 {
					v.applied++
				}
			}
			if vol, _ := s.CSIVolumeByID(nil, "", "snw"); vol != nil && vol.PastClaims["a1"] != nil {
				v.released = true
			}
			seen <- v
		}()
		errs := s.UpdateAllocsFromClientBatch(20, reqs)
		must.Eq(t, view{applied: 2, released: true}, <-seen, must.Sprintf("round %d: a woken reader sees the whole index", round))

		must.SliceLen(t, len(reqs), errs)
		for i, err := range errs {
			if i == 2 || i == 4 {
				mustCode(t, structs.ErrBadRequest, err)
				continue
			}
			must.NoError(t, err, must.Sprintf("report %d", i))
		}

		b1, err := s.AllocByID(nil, "b1")
		must.NoError(t, err)
		must.Eq(t, b1Before, b1, must.Sprint("a refused report writes nothing of itself"))
		a2, err := s.AllocByID(nil, "a2")
		must.NoError(t, err)
		must.EqOp(t, running, a2.ClientStatus, must.Sprint("the later report of a2 carries no status: the earlier one's stays"))
		must.MapContainsKeys(t, a2.TaskStates, []string{"sidecar"})
		vol := mustVolume(t, s, "snw")
		must.MapNotContainsKey(t, vol.WriteClaims, "a1")
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["a1"].State)
		must.Eq(t, at, vol.PastClaims["a1"].UpdatedAt, must.Sprint("stamped with its report's time"))
		must.EqOp(t, uint64(20), mustIndex(t, s, "allocs"))
		must.EqOp(t, uint64(20), mustIndex(t, s, "csi_volumes"))
	}
}

// TestStateStore_UpdateAllocsFromClientBatch_NothingApplied: a batch of
// refused and no-op reports writes nothing, not even the index.
func TestStateStore_UpdateAllocsFromClientBatch_NothingApplied(t *testing.T) {
	s := claimWorld(t)
	before, err := s.LatestIndex()
	must.NoError(t, err)
	errs := s.UpdateAllocsFromClientBatch(20, []structs.AllocClientUpdateRequest{
		{Allocs: []*structs.Allocation{{ID: "no-such-alloc", ClientStatus: structs.AllocClientStatusRunning}}},
		{Allocs: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}, nil}},
	})
	must.NoError(t, errs[0])
	mustCode(t, structs.ErrBadRequest, errs[1])
	after, err := s.LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, before, after)
	a1, err := s.AllocByID(nil, "a1")
	must.NoError(t, err)
	must.EqOp(t, uint64(3), a1.ModifyIndex)
}
