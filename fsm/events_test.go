package fsm

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// eventsAfter asks the FSM's broker for the events after index, without
// waiting.
func eventsAfter(f *FSM, index uint64) ([]structs.Event, uint64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return f.Events().Next(ctx, index, 100, nil)
}

func applyAt(t *testing.T, f *FSM, index uint64, typ structs.MessageType, msg any) {
	t.Helper()
	buf, err := structs.Encode(typ, msg)
	must.NoError(t, err)
	must.Nil(t, f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: buf}))
}

// The FSM's applies publish their events at their raft index; a restore
// sends the subscribers before it back to a list, and the restored store
// publishes into the same broker.
func TestFSM_Events_AppliedThenRestored(t *testing.T) {
	f := newFSM(t)
	applyAt(t, f, 5, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("n1")})
	evs, next, err := eventsAfter(f, 1)
	must.NoError(t, err)
	must.SliceLen(t, 1, evs)
	must.EqOp(t, structs.EventNodeRegistered, evs[0].Type)
	must.EqOp(t, 5, evs[0].Index)
	must.EqOp(t, 5, next)

	snap := persist(t, f)
	applyAt(t, f, 6, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("n2")})
	must.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(snap))))

	_, _, err = eventsAfter(f, 6)
	must.ErrorIs(t, err, structs.ErrGone, must.Sprint("caught up before the restore, which events cannot tell"))

	applyAt(t, f, 9, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("n3")})
	evs, next, err = eventsAfter(f, 8)
	must.NoError(t, err)
	must.SliceLen(t, 1, evs)
	must.EqOp(t, "n3", evs[0].Key)
	must.EqOp(t, 9, next)
}
