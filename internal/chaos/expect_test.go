package chaos

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestExpect_Scenarios(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000, 0).Add(time.Duration(s) * time.Second) }
	op := func(k OpKind, r Result, call, ret int) Op {
		return Op{Kind: k, Volume: "v", Result: r, Call: at(call), Return: at(ret)}
	}
	cases := []struct {
		name          string
		ops           []Op
		present, gone bool
	}{
		{"acked register alone", []Op{op(OpRegister, ResultOK, 1, 2)}, true, false},
		{"register after an acked deregister", []Op{op(OpDeregister, ResultOK, 1, 2), op(OpRegister, ResultOK, 3, 4)}, true, false},
		{"register concurrent with a deregister", []Op{op(OpRegister, ResultOK, 1, 4), op(OpDeregister, ResultOK, 2, 3)}, false, false},
		{"an unknown deregister may land any time", []Op{op(OpDeregister, ResultUnknown, 1, 2), op(OpRegister, ResultOK, 3, 4)}, false, false},
		{"a failed deregister changes nothing", []Op{op(OpDeregister, ResultFail, 1, 2), op(OpRegister, ResultOK, 3, 4)}, true, false},
		{"deregister after the register", []Op{op(OpRegister, ResultOK, 1, 2), op(OpDeregister, ResultOK, 3, 4)}, false, true},
		{"an unknown register may land any time", []Op{op(OpRegister, ResultUnknown, 1, 2), op(OpDeregister, ResultOK, 3, 4)}, false, false},
		{"reads change nothing", []Op{op(OpRegister, ResultOK, 1, 2), op(OpRead, ResultUnknown, 3, 4)}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := Expect(tc.ops)
			must.EqOp(t, tc.present, len(e.Present) == 1)
			must.EqOp(t, tc.gone, len(e.Absent) == 1)
		})
	}
}
