package check

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestConvergence(t *testing.T) {
	same := func(vols map[string]Value) map[string]map[string]Value {
		return map[string]map[string]Value{"s1": vols, "s2": vols, "s3": vols}
	}
	cases := []struct {
		name    string
		finals  map[string]map[string]Value
		history []Operation
		want    []string // "volume: detail" of each violation
	}{
		{
			name:   "every acknowledged write on every server",
			finals: same(map[string]Value{"vol-1": v1b, "vol-3": v2}),
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(1, KindRegister, "vol-1", v1b, OutcomeOK, 20, 30),
				write(0, KindRegister, "vol-2", v2, OutcomeOK, 0, 10),
				write(0, KindDeregister, "vol-2", Value{}, OutcomeOK, 20, 30),
				write(0, KindRegister, "vol-4", v2, OutcomeOK, 0, 10),
				write(1, KindDeregister, "vol-4", Value{}, OutcomeIndeterminate, 5, never), // may have happened
				write(0, KindRegister, "vol-3", v2, OutcomeIndeterminate, 0, never),
				write(0, KindRegister, "vol-5", v2, OutcomeRefused, 0, 10),
			},
		},
		{
			name: "a server lost a register and kept a deregistered volume",
			finals: map[string]map[string]Value{
				"s1": {"vol-1": v1, "vol-2": v2},
				"s2": {"vol-1": v1},
				"s3": {"vol-1": v1b},
			},
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(0, KindRegister, "vol-2", v2, OutcomeOK, 0, 10),
				write(0, KindDeregister, "vol-2", Value{}, OutcomeOK, 20, 30),
				write(0, KindRegister, "vol-3", v2, OutcomeOK, 0, 10),
			},
			want: []string{
				"vol-1: servers disagree: s1=ext-1/rw, s2=ext-1/rw, s3=ext-1/ro",
				"vol-2: servers disagree: s1=ext-2/rw, s2=absent, s3=absent",
				"vol-2: acknowledged deregister (client 0, called at 20ns) is still present on server s1",
				"vol-3: acknowledged register (client 0, called at 0s) is missing on server s1",
				"vol-3: acknowledged register (client 0, called at 0s) is missing on server s2",
				"vol-3: acknowledged register (client 0, called at 0s) is missing on server s3",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Convergence(tc.finals, tc.history)
			var details []string
			for _, v := range got {
				must.EqOp(t, "convergence", v.Check)
				details = append(details, v.VolumeID+": "+v.Detail)
			}
			must.Eq(t, tc.want, details)
		})
	}
}
