package state_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

var drainStart = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func mustNode(t *testing.T, s *state.StateStore, id string) *structs.Node {
	t.Helper()
	n, err := s.NodeByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, n)
	return n
}

func startDrain(t *testing.T, s *state.StateStore, index uint64, nodeID string, spec structs.DrainSpec, at time.Time) {
	t.Helper()
	must.NoError(t, s.UpdateNodeDrain(index, &structs.NodeUpdateDrainRequest{NodeID: nodeID,
		DrainStrategy: structs.NewDrainStrategy(spec, at),
		Events:        []*structs.NodeEvent{{Message: "drain started", Subsystem: structs.NodeEventSubsystemDrain, Timestamp: at}}}))
}

func TestStateStore_UpsertNode_NewNodeIsEligible(t *testing.T) {
	s := statetest.New(t)
	n := statetest.Node("n1")
	n.SchedulingEligibility = structs.NodeSchedulingIneligible // a client does not choose
	n.DrainStrategy = structs.NewDrainStrategy(structs.DrainSpec{}, drainStart)
	upsertNodes(t, s, 10, n)
	got := mustNode(t, s, "n1")
	must.EqOp(t, structs.NodeSchedulingEligible, got.SchedulingEligibility)
	must.Nil(t, got.DrainStrategy)
	must.True(t, got.Schedulable())
}

func TestStateStore_UpdateNodeDrain_StartKeptByRegistrationAndCancel(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"))
	startDrain(t, s, 11, "n1", structs.DrainSpec{Deadline: time.Hour}, drainStart)

	got := mustNode(t, s, "n1")
	must.EqOp(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	must.NotNil(t, got.DrainStrategy)
	must.EqOp(t, uint64(11), got.DrainStrategy.StartIndex)
	must.Eq(t, drainStart.Add(time.Hour), got.DrainStrategy.ForceDeadline)
	must.False(t, got.Schedulable(), must.Sprint("a draining node takes no placement"))
	must.True(t, got.Ready())
	must.EqOp(t, "drain started", got.Events[len(got.Events)-1].Message)

	// The client registers again (a restart): the drain stays.
	upsertNodes(t, s, 12, statetest.Node("n1"))
	got = mustNode(t, s, "n1")
	must.NotNil(t, got.DrainStrategy)
	must.EqOp(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)

	// An update of the drain keeps where it began.
	startDrain(t, s, 13, "n1", structs.DrainSpec{Deadline: 2 * time.Hour}, drainStart.Add(time.Minute))
	got = mustNode(t, s, "n1")
	must.EqOp(t, uint64(11), got.DrainStrategy.StartIndex)
	must.Eq(t, drainStart.Add(time.Minute+2*time.Hour), got.DrainStrategy.ForceDeadline)

	// Cancel: no drain, still ineligible.
	must.NoError(t, s.UpdateNodeDrain(14, &structs.NodeUpdateDrainRequest{NodeID: "n1"}))
	got = mustNode(t, s, "n1")
	must.Nil(t, got.DrainStrategy)
	must.EqOp(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	must.EqOp(t, uint64(14), mustIndex(t, s, state.TableNodes))
}

func TestStateStore_UpdateNodeEligibility(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"))

	must.NoError(t, s.UpdateNodeEligibility(11, &structs.NodeUpdateEligibilityRequest{NodeID: "n1",
		Eligibility: structs.NodeSchedulingIneligible, Event: &structs.NodeEvent{Message: "marked ineligible"}}))
	got := mustNode(t, s, "n1")
	must.False(t, got.Schedulable())
	must.EqOp(t, "marked ineligible", got.Events[len(got.Events)-1].Message)

	startDrain(t, s, 12, "n1", structs.DrainSpec{}, drainStart)
	err := s.UpdateNodeEligibility(13, &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingEligible})
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "berth node drain -disable n1")

	must.NoError(t, s.UpdateNodeDrain(14, &structs.NodeUpdateDrainRequest{NodeID: "n1"}))
	must.NoError(t, s.UpdateNodeEligibility(15, &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingEligible}))
	must.True(t, mustNode(t, s, "n1").Schedulable())

	for name, req := range map[string]*structs.NodeUpdateEligibilityRequest{
		"unknown eligibility": {NodeID: "n1", Eligibility: "maybe"},
		"no node id":          {Eligibility: structs.NodeSchedulingEligible},
	} {
		t.Run(name, func(t *testing.T) {
			must.ErrorIs(t, s.UpdateNodeEligibility(16, req), structs.ErrBadRequest)
		})
	}
	must.ErrorIs(t, s.UpdateNodeEligibility(16, &structs.NodeUpdateEligibilityRequest{NodeID: "gone",
		Eligibility: structs.NodeSchedulingEligible}), structs.ErrNotFound)
}

func TestStateStore_UpdateNodeDrain_Step(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"), statetest.Node("n2"))
	a1, a2, other := statetest.Alloc("a1", "n1"), statetest.Alloc("a2", "n1"), statetest.Alloc("a3", "n2")
	a2.Name = statetest.JobID + ".web[1]"
	upsertAllocs(t, s, 11, a1, a2, other)
	startDrain(t, s, 12, "n1", structs.DrainSpec{Deadline: time.Hour}, drainStart)

	t.Run("a step of another drain is refused and writes nothing", func(t *testing.T) {
		err := s.UpdateNodeDrain(13, &structs.NodeUpdateDrainRequest{NodeID: "n1",
			Step: &structs.DrainStep{StartedAt: drainStart.Add(-time.Minute), StopAllocs: []string{"a1"}}})
		must.ErrorIs(t, err, structs.ErrConflict)
		a, err := s.AllocByID(nil, "a1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
	})
	t.Run("an allocation of another node is refused", func(t *testing.T) {
		err := s.UpdateNodeDrain(13, &structs.NodeUpdateDrainRequest{NodeID: "n1",
			Step: &structs.DrainStep{StartedAt: drainStart, StopAllocs: []string{"a1", "a3"}}})
		must.ErrorIs(t, err, structs.ErrBadRequest)
		a, err := s.AllocByID(nil, "a1")
		must.NoError(t, err)
		must.EqOp(t, structs.AllocDesiredStatusRun, a.DesiredStatus, must.Sprint("all or nothing"))
	})

	must.NoError(t, s.UpdateNodeDrain(14, &structs.NodeUpdateDrainRequest{NodeID: "n1",
		Step:   &structs.DrainStep{StartedAt: drainStart, StopAllocs: []string{"a1", "gone"}},
		Events: []*structs.NodeEvent{{Message: "stopping a1"}}}))
	a, err := s.AllocByID(nil, "a1")
	must.NoError(t, err)
	must.EqOp(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
	must.EqOp(t, structs.AllocClientStatusRunning, a.ClientStatus, must.Sprint("a desired stop: the client reports when it is over"))
	must.EqOp(t, uint64(14), a.ModifyIndex)
	must.StrContains(t, a.DesiredDescription, "drain node n1")
	must.EqOp(t, uint64(14), mustIndex(t, s, state.TableAllocs))
	must.NotNil(t, mustNode(t, s, "n1").DrainStrategy)

	must.NoError(t, s.UpdateNodeDrain(15, &structs.NodeUpdateDrainRequest{NodeID: "n1",
		Step:   &structs.DrainStep{StartedAt: drainStart, StopAllocs: []string{"a2"}, Complete: true},
		Events: []*structs.NodeEvent{{Message: "drain complete"}}}))
	got := mustNode(t, s, "n1")
	must.Nil(t, got.DrainStrategy)
	must.EqOp(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	must.EqOp(t, "drain complete", got.Events[len(got.Events)-1].Message)

	draining, err := s.DrainingNodes(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, draining)
}

func TestStateStore_UpdateNodeDrain_NodeMissing(t *testing.T) {
	s := statetest.New(t)
	err := s.UpdateNodeDrain(10, &structs.NodeUpdateDrainRequest{NodeID: "gone"})
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrContains(t, err.Error(), "berth node status")
	must.ErrorIs(t, s.UpdateNodeDrain(10, &structs.NodeUpdateDrainRequest{}), structs.ErrBadRequest)
}
