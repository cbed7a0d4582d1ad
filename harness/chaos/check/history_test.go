package check

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestOutcomeFromStatus(t *testing.T) {
	cases := []struct {
		status int
		want   Outcome
	}{
		{200, OutcomeOK},
		{204, OutcomeOK},
		{404, OutcomeNotFound},
		{409, OutcomeConflict},
		{400, OutcomeRefused},
		{403, OutcomeRefused},
		{408, OutcomeIndeterminate},
		{429, OutcomeIndeterminate},
		{500, OutcomeIndeterminate},
		{503, OutcomeIndeterminate},
		{0, OutcomeIndeterminate},
	}
	for _, tc := range cases {
		t.Run(tc.want.String(), func(t *testing.T) {
			must.EqOp(t, tc.want, OutcomeFromStatus(tc.status), must.Sprintf("status %d", tc.status))
		})
	}
}

func TestOperation_String(t *testing.T) {
	must.EqOp(t, "register(vol-1, ext-1/rw) -> ok", write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 1).String())
	must.EqOp(t, "read(vol-1) -> ext-1/rw", read(0, "vol-1", OutcomeOK, v1, 0, 1).String())
	must.EqOp(t, "deregister(vol-1) -> not-found", write(0, KindDeregister, "vol-1", Value{}, OutcomeNotFound, 0, 1).String())
}
