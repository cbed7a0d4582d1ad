package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// One allocation's life through the state store: each step is stamped
// once, with the time of the entry (or the client's report) that took it;
// a client cannot stamp a server's step nor move a stamp; the claim keeps
// its steps up to freed, among the volume's last freed claims, and the
// events carry them.
func TestStateStore_Timeline_AllocAndClaim(t *testing.T) {
	s := claimWorld(t)
	rec := &recorder{}
	s.SetEventSink(rec)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: statetest.Job(statetest.JobID), Allocs: []*structs.Allocation{statetest.Alloc("p1", "n1")},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("snw", "p1")}, Timestamp: t0.UnixNano()}))
	// The client reports its steps, and tries to stamp the servers'
	// placement later and a terminal report it has not made.
	report := &structs.Allocation{ID: "p1", ClientStatus: structs.AllocClientStatusRunning, Timeline: structs.Timeline{
		{Step: structs.StepReceived, At: ms(5)}, {Step: structs.StepVolumesMounted, At: ms(20)},
		{Step: structs.StepTasksStarted, At: ms(30)},
		{Step: structs.StepPlaced, At: ms(99)}, {Step: structs.StepTerminalReported, At: ms(99)}}}
	must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{report}, ms(31)))
	// A later report stamps a received again: the first stays.
	again := &structs.Allocation{ID: "p1", ClientStatus: structs.AllocClientStatusRunning,
		Timeline: structs.Timeline{{Step: structs.StepReceived, At: ms(500)}}}
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{again}, ms(40)))
	must.NoError(t, s.StopJob(13, structs.DefaultNamespace, statetest.JobID, false, ms(100)))
	done := &structs.Allocation{ID: "p1", ClientStatus: structs.AllocClientStatusComplete, Timeline: structs.Timeline{
		{Step: structs.StepStopSeen, At: ms(103)}, {Step: structs.StepSignalSent, At: ms(104)},
		{Step: structs.StepTasksExited, At: ms(110)}, {Step: structs.StepVolumesUnmounted, At: ms(115)}}}
	must.NoError(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{done}, ms(118)))

	a, err := s.AllocByID(nil, "p1")
	must.NoError(t, err)
	want := structs.Timeline{{Step: structs.StepPlaced, At: t0}, {Step: structs.StepReceived, At: ms(5)},
		{Step: structs.StepVolumesMounted, At: ms(20)}, {Step: structs.StepTasksStarted, At: ms(30)},
		{Step: structs.StepStopRequested, At: ms(100)}, {Step: structs.StepStopSeen, At: ms(103)},
		{Step: structs.StepSignalSent, At: ms(104)}, {Step: structs.StepTasksExited, At: ms(110)},
		{Step: structs.StepVolumesUnmounted, At: ms(115)}, {Step: structs.StepTerminalReported, At: ms(118)}}
	must.Eq(t, want, a.Timeline.Sorted())

	// The terminal report started the release (unpublishing) at its time.
	rel := func(st structs.CSIVolumeClaimState, at time.Time) structs.CSIVolumeClaimRequest {
		r := releaseReq("snw", "p1", st)
		r.Timestamp = at
		return r
	}
	must.NoError(t, claimOne(s, 15, rel(nodeDetached, ms(125))))
	must.NoError(t, claimOne(s, 16, rel(ctrlDetached, ms(131))))
	rec.take()
	must.NoError(t, claimOne(s, 17, rel(freed, ms(133))))

	vol := mustVolume(t, s, "snw")
	must.False(t, vol.InUse(), must.Sprint("a freed claim holds nothing"))
	claim := vol.ClaimOf("p1")
	must.NotNil(t, claim)
	wantClaim := structs.Timeline{{Step: structs.StepClaimTaken, At: t0}, {Step: structs.StepReleaseStarted, At: ms(118)},
		{Step: structs.StepNodeUnpublished, At: ms(125)}, {Step: structs.StepControllerUnpublished, At: ms(131)},
		{Step: structs.StepFreed, At: ms(133)}}
	must.Eq(t, wantClaim, claim.Timeline)
	must.EqOp(t, freed, claim.State)

	evs := rec.take()
	var freedEv *structs.CSIVolumeClaimEvent
	for _, e := range evs {
		if e.Type == structs.EventClaimFreed {
			freedEv = e.Payload.Claim
		}
	}
	must.NotNil(t, freedEv, must.Sprintf("no ClaimFreed in %v", kinds(evs)))
	must.Eq(t, wantClaim, freedEv.Timeline, must.Sprint("the ClaimFreed event carries the claim's timeline"))
}

// A renewed claim keeps the time it was first taken, and a volume keeps
// only its last MaxFreedClaims freed claims, oldest dropped first.
func TestStateStore_Timeline_RenewAndFreedBound(t *testing.T) {
	s := claimWorld(t)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	idx := uint64(20)
	var ids []string
	for i := range structs.MaxFreedClaims + 2 {
		id := fmt.Sprintf("r%d", i)
		ids = append(ids, id)
		upsertAllocs(t, s, idx, statetest.Alloc(id, "n1"))
		for k := range 2 { // taken, then renewed
			r := claimReq("snw", id, write)
			r.NodeID = "n1"
			r.Timestamp = t0.Add(time.Duration(i*10+k) * time.Second)
			must.NoError(t, claimOne(s, idx+1+uint64(k), r))
		}
		taken, ok := mustVolume(t, s, "snw").ClaimOf(id).Timeline.At(structs.StepClaimTaken)
		must.True(t, ok)
		must.Eq(t, t0.Add(time.Duration(i*10)*time.Second), taken, must.Sprint("a renewal keeps the first take"))
		r := releaseReq("snw", id, freed)
		r.Timestamp = t0.Add(time.Duration(i*10+5) * time.Second)
		must.NoError(t, claimOne(s, idx+3, r))
		idx += 10
	}
	vol := mustVolume(t, s, "snw")
	must.SliceLen(t, structs.MaxFreedClaims, vol.FreedClaims)
	for i, c := range vol.FreedClaims {
		must.EqOp(t, ids[i+2], c.AllocID, must.Sprint("the oldest freed claims are dropped first"))
	}
	must.Nil(t, vol.ClaimOf(ids[0]))
}

// A claim taken while its plugin publishes through a controller says so,
// and keeps saying so on renewal and through its release, whatever the
// plugin does since; one taken on a plugin without a controller does not.
func TestStateStore_ClaimRecordsControllerPublish(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 1, statetest.NodeWithPlugin("n1", "ctl", true, true, true), statetest.NodeWithPlugin("n2", "plain", false, true, true))
	upsertVolumes(t, s, 2, statetest.Volume("v-ctl", "ctl"), statetest.Volume("v-plain", "plain"))
	upsertAllocs(t, s, 3, statetest.Alloc("a1", "n1"), statetest.Alloc("a2", "n2"))
	take := func(index uint64, vol, alloc string) {
		r := claimReq(vol, alloc, write)
		r.Timestamp = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		must.NoError(t, claimOne(s, index, r))
	}
	take(4, "v-ctl", "a1")
	take(5, "v-plain", "a2")
	must.True(t, mustVolume(t, s, "v-ctl").ClaimOf("a1").ControllerPublish)
	must.False(t, mustVolume(t, s, "v-plain").ClaimOf("a2").ControllerPublish)

	// The plugin's controller goes away; a renewal keeps the mark.
	upsertNodes(t, s, 6, statetest.NodeWithPlugin("n1", "ctl", false, true, true))
	take(7, "v-ctl", "a1")
	must.True(t, mustVolume(t, s, "v-ctl").ClaimOf("a1").ControllerPublish)
	must.NoError(t, claimOne(s, 8, releaseReq("v-ctl", "a1", unpublishing)))
	must.True(t, mustVolume(t, s, "v-ctl").ClaimOf("a1").ControllerPublish, must.Sprint("its release still knows to unpublish"))
}
