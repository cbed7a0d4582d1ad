package chaos

import (
	"slices"
	"time"
)

// forever stands for the return of an operation with an unknown result:
// it may take effect at any time after its call.
var forever = time.Unix(1<<62, 0)

// Expected is what the history makes certain of the final state, volume
// by volume: a volume in Present must be registered at the end, one in
// Absent must not be.
type Expected struct {
	Present []string
	Absent  []string
}

// Expect derives, from a finished history, what must hold at the end:
//   - a volume is present when an acknowledged register began after
//     every deregister that may have taken effect had returned (an
//     unknown deregister may take effect at any time: none may exist);
//   - symmetrically, a volume is absent when an acknowledged deregister
//     began after every register that may have taken effect had returned.
//
// Definitely failed operations had no effect, and reads change nothing.
func Expect(ops []Op) Expected {
	type bounds struct {
		lastRegCall, lastDeregCall time.Time // latest call of an acknowledged one
		regEnd, deregEnd           time.Time // latest return of one that may have taken effect
	}
	by := map[string]*bounds{}
	for _, op := range ops {
		if op.Kind == OpRead || op.Result == ResultFail {
			continue
		}
		b := by[op.Volume]
		if b == nil {
			b = &bounds{}
			by[op.Volume] = b
		}
		end := op.Return
		if op.Result == ResultUnknown {
			end = forever
		}
		switch op.Kind {
		case OpRegister:
			b.regEnd = later(b.regEnd, end)
			if op.Result == ResultOK {
				b.lastRegCall = later(b.lastRegCall, op.Call)
			}
		case OpDeregister:
			b.deregEnd = later(b.deregEnd, end)
			if op.Result == ResultOK {
				b.lastDeregCall = later(b.lastDeregCall, op.Call)
			}
		}
	}
	var e Expected
	for id, b := range by {
		switch {
		case !b.lastRegCall.IsZero() && b.lastRegCall.After(b.deregEnd):
			e.Present = append(e.Present, id)
		case !b.lastDeregCall.IsZero() && b.lastDeregCall.After(b.regEnd):
			e.Absent = append(e.Absent, id)
		}
	}
	slices.Sort(e.Present)
	slices.Sort(e.Absent)
	return e
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
