package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_UpsertNode_Create(t *testing.T) {
	s := statetest.New(t)
	n := statetest.Node("n1")
	must.NoError(t, s.UpsertNode(10, n))

	got, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.NotNil(t, got)
	must.Eq(t, uint64(10), got.CreateIndex)
	must.Eq(t, uint64(10), got.ModifyIndex)
	must.Eq(t, structs.NodeStatusReady, got.Status)
	must.Eq(t, uint64(10), mustIndex(t, s, state.TableNodes))
	must.Eq(t, uint64(0), mustIndex(t, s, state.TableCSIPlugins), must.Sprint("no plugin reported, no plugin write"))
	must.Eq(t, uint64(0), n.ModifyIndex, must.Sprint("the caller's node must not be changed"))
}

func TestStateStore_UpsertNode_DefaultsStatus(t *testing.T) {
	s := statetest.New(t)
	n := statetest.Node("n1")
	n.Status = ""
	must.NoError(t, s.UpsertNode(10, n))
	got, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusInit, got.Status)
}

func TestStateStore_UpsertNode_UpdateKeepsCreateIndexAndEvents(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"))
	must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusReady, 5, &structs.NodeEvent{Message: "heartbeat ok"}))

	update := statetest.Node("n1")
	update.HTTPAddr = "10.0.0.1:4746"
	update.Events = []*structs.NodeEvent{{Message: "from the client"}}
	must.NoError(t, s.UpsertNode(12, update))

	got, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.Eq(t, uint64(10), got.CreateIndex)
	must.Eq(t, uint64(12), got.ModifyIndex)
	must.Eq(t, "10.0.0.1:4746", got.HTTPAddr)
	must.SliceLen(t, 1, got.Events)
	must.Eq(t, "heartbeat ok", got.Events[0].Message)
}

func TestStateStore_UpsertNode_Invalid(t *testing.T) {
	bad := statetest.Node("n1")
	bad.Status = "sleepy"
	cases := []struct {
		name string
		node *structs.Node
	}{
		{"nil node", nil},
		{"missing id", statetest.Node("")},
		{"unknown status", bad},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			mustCode(t, structs.ErrBadRequest, s.UpsertNode(10, tc.node))
			must.Eq(t, uint64(0), mustIndex(t, s, state.TableNodes))
		})
	}
}

func TestStateStore_UpsertNode_StoresACopy(t *testing.T) {
	s := statetest.New(t)
	n := statetest.NodeWithPlugin("n1", plugID, false, true, true)
	upsertNodes(t, s, 10, n)
	n.Name = "changed"
	n.CSINodePlugins[plugID].Healthy = false

	got, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.Eq(t, "n1", got.Name)
	must.True(t, got.CSINodePlugins[plugID].Healthy)
	must.True(t, mustPlugin(t, s, plugID).Nodes["n1"].Healthy)
}

func TestStateStore_DeleteNode(t *testing.T) {
	cases := []struct {
		name      string
		ids       []string
		want      error
		remaining []string
	}{
		{name: "one node", ids: []string{"n1"}, remaining: []string{"n2"}},
		{name: "both nodes", ids: []string{"n1", "n2"}},
		{name: "duplicate id", ids: []string{"n1", "n1"}, remaining: []string{"n2"}},
		{name: "unknown node deletes nothing", ids: []string{"n1", "ghost"}, want: structs.ErrNotFound, remaining: []string{"n1", "n2"}},
		{name: "no ids", ids: nil, want: structs.ErrBadRequest, remaining: []string{"n1", "n2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			upsertNodes(t, s, 10, statetest.Node("n1"), statetest.Node("n2"))

			mustCode(t, tc.want, s.DeleteNode(11, tc.ids))

			nodes := collect[structs.Node](t)(s.Nodes(nil))
			var ids []string
			for _, n := range nodes {
				ids = append(ids, n.ID)
			}
			must.Eq(t, tc.remaining, ids)
			wantIndex := uint64(11)
			if tc.want != nil {
				wantIndex = 10
			}
			must.Eq(t, wantIndex, mustIndex(t, s, state.TableNodes))
		})
	}
}

func TestStateStore_UpdateNodeStatus(t *testing.T) {
	event := func(i int) *structs.NodeEvent {
		return &structs.NodeEvent{Message: fmt.Sprintf("event %d", i), Timestamp: time.Unix(int64(i), 0)}
	}
	cases := []struct {
		name       string
		node       string
		status     string
		events     int // events sent, one status update each
		want       error
		wantEvents int
	}{
		{name: "down", node: "n1", status: structs.NodeStatusDown, events: 1, wantEvents: 1},
		{name: "no event", node: "n1", status: structs.NodeStatusDown, events: 0},
		{name: "keeps newest ten events", node: "n1", status: structs.NodeStatusReady, events: 12, wantEvents: 10},
		{name: "unknown status", node: "n1", status: "gone", events: 1, want: structs.ErrBadRequest},
		{name: "empty status", node: "n1", status: "", want: structs.ErrBadRequest},
		{name: "unknown node", node: "ghost", status: structs.NodeStatusDown, want: structs.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statetest.New(t)
			upsertNodes(t, s, 10, statetest.Node("n1"))

			index := uint64(10)
			if tc.events == 0 {
				index++
				mustCode(t, tc.want, s.UpdateNodeStatus(index, tc.node, tc.status, 99, nil))
			}
			for i := 1; i <= tc.events; i++ {
				index++
				mustCode(t, tc.want, s.UpdateNodeStatus(index, tc.node, tc.status, 99, event(i)))
			}

			got, err := s.NodeByID(nil, "n1")
			must.NoError(t, err)
			if tc.want != nil {
				must.Eq(t, uint64(10), got.ModifyIndex)
				must.Eq(t, structs.NodeStatusReady, got.Status)
				must.SliceEmpty(t, got.Events)
				must.Eq(t, uint64(10), mustIndex(t, s, state.TableNodes))
				return
			}
			must.Eq(t, tc.status, got.Status)
			must.Eq(t, int64(99), got.StatusUpdatedAt)
			must.Eq(t, index, got.ModifyIndex)
			must.Eq(t, uint64(10), got.CreateIndex)
			must.SliceLen(t, tc.wantEvents, got.Events)
			if tc.wantEvents > 0 {
				must.Eq(t, fmt.Sprintf("event %d", tc.events), got.Events[len(got.Events)-1].Message)
				must.Eq(t, fmt.Sprintf("event %d", tc.events-tc.wantEvents+1), got.Events[0].Message)
			}
		})
	}
}

func TestStateStore_UpdateNodeStatus_EventIsCopied(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("n1"))
	ev := &structs.NodeEvent{Message: "down", Details: map[string]string{"reason": "ttl"}}
	must.NoError(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusDown, 1, ev))
	ev.Details["reason"] = "changed"

	got, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.Eq(t, "ttl", got.Events[0].Details["reason"])
}

func TestStateStore_NodesByIDPrefix(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, statetest.Node("abc1"), statetest.Node("abd2"), statetest.Node("x"))
	cases := []struct {
		prefix string
		want   int
	}{
		{"ab", 2},
		{"abc", 1},
		{"", 3},
		{"zz", 0},
	}
	for _, tc := range cases {
		t.Run("prefix "+tc.prefix, func(t *testing.T) {
			must.SliceLen(t, tc.want, collect[structs.Node](t)(s.NodesByIDPrefix(nil, tc.prefix)))
		})
	}
}

func TestStateStore_NodeByID_Absent(t *testing.T) {
	s := statetest.New(t)
	n, err := s.NodeByID(nil, "ghost")
	must.NoError(t, err)
	must.Nil(t, n)
}
