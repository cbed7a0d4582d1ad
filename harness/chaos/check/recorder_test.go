package check

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shoenig/test/must"
)

func TestRecorder_ConcurrentClients(t *testing.T) {
	r := NewRecorder()
	const clients, each = 8, 50
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				vol := fmt.Sprintf("vol-%d", i%3)
				id := r.Invoke(Operation{Client: c, Kind: KindRegister, VolumeID: vol, Input: v1})
				r.Return(id, OutcomeOK, Value{})
			}
		}()
	}
	wg.Wait()

	h := r.History()
	must.SliceLen(t, clients*each, h)
	for _, op := range h {
		must.EqOp(t, OutcomeOK, op.Outcome)
		must.LessEq(t, op.Return, op.Call, must.Sprintf("call after return: %v", op))
	}
	res, err := Linearizable(h, "", 0)
	must.NoError(t, err)
	must.True(t, res.OK, must.Sprint(res))
}

func TestRecorder_UnreturnedIsIndeterminate(t *testing.T) {
	r := NewRecorder()
	done := r.Invoke(Operation{Client: 0, Kind: KindRegister, VolumeID: "vol-1", Input: v1})
	r.Return(done, OutcomeOK, Value{})
	r.Return(done, OutcomeConflict, Value{}) // a second answer is ignored
	r.Invoke(Operation{Client: 1, Kind: KindDeregister, VolumeID: "vol-1", Outcome: OutcomeOK, Return: 7})

	h := r.History()
	must.SliceLen(t, 2, h)
	must.EqOp(t, OutcomeOK, h[0].Outcome)
	must.EqOp(t, OutcomeIndeterminate, h[1].Outcome)
	must.EqOp(t, int64(0), h[1].Return)

	h[0].VolumeID = "changed" // History is a copy
	must.EqOp(t, "vol-1", r.History()[0].VolumeID)
}
