package check

import (
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/shoenig/test/must"
)

const never = 0 // the Return of an indeterminate operation: ignored

func TestLinearizable_Histories(t *testing.T) {
	cases := []struct {
		name    string
		history []Operation
		ok      bool
	}{
		{
			name: "concurrent register, update, deregister and reads",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				read(1, "vol-1", OutcomeNotFound, Value{}, 5, 15), // before the register took effect
				read(2, "vol-1", OutcomeOK, v1, 5, 15),            // after it
				write(3, KindRegister, "vol-2", v2, OutcomeOK, 2, 12),
				write(0, KindDeregister, "vol-1", Value{}, OutcomeOK, 20, 30),
				read(1, "vol-1", OutcomeOK, v1, 25, 35), // concurrent with the deregister
				read(2, "vol-1", OutcomeNotFound, Value{}, 40, 50),
				write(0, KindDeregister, "vol-1", Value{}, OutcomeNotFound, 52, 55),
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 60, 70),
				write(1, KindRegister, "vol-1", v1b, OutcomeOK, 72, 80), // an update
				write(2, KindRegister, "vol-1", v2, OutcomeConflict, 82, 84),
				write(3, KindDeregister, "vol-2", Value{}, OutcomeConflict, 82, 84), // claimed
				read(3, "vol-1", OutcomeOK, v1b, 90, 95),
				read(3, "vol-2", OutcomeOK, v2, 96, 99),
			},
			ok: true,
		},
		{
			name: "stale read after an acknowledged deregister",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(0, KindDeregister, "vol-1", Value{}, OutcomeOK, 20, 30),
				read(1, "vol-1", OutcomeOK, v1, 40, 50),
			},
		},
		{
			name: "indeterminate register later present",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeIndeterminate, 0, never),
				read(1, "vol-1", OutcomeNotFound, Value{}, 20, 30),
				read(1, "vol-1", OutcomeOK, v1, 40, 50),
			},
			ok: true,
		},
		{
			name: "indeterminate register never seen",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeIndeterminate, 0, never),
				read(1, "vol-1", OutcomeNotFound, Value{}, 20, 30),
				read(1, "vol-1", OutcomeNotFound, Value{}, 40, 50),
			},
			ok: true,
		},
		{
			name: "indeterminate register seen, then gone without a deregister",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeIndeterminate, 0, never),
				read(1, "vol-1", OutcomeOK, v1, 20, 30),
				read(1, "vol-1", OutcomeNotFound, Value{}, 40, 50),
			},
		},
		{
			name: "indeterminate deregister may remove later",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(0, KindDeregister, "vol-1", Value{}, OutcomeIndeterminate, 20, never),
				read(1, "vol-1", OutcomeOK, v1, 30, 40),
				read(1, "vol-1", OutcomeNotFound, Value{}, 50, 60),
			},
			ok: true,
		},
		{
			name: "refused register and unanswered read are dropped",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeRefused, 0, 10),
				read(1, "vol-1", OutcomeIndeterminate, v2, 5, never),
				read(1, "vol-1", OutcomeNotFound, Value{}, 20, 30),
			},
			ok: true,
		},
		{
			name: "acknowledged change of the immutable fields",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(0, KindRegister, "vol-1", v2, OutcomeOK, 20, 30),
			},
		},
		{
			name: "conflict on an absent volume",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeConflict, 0, 10),
			},
		},
		{
			name: "lost acknowledged update",
			history: []Operation{
				write(0, KindRegister, "vol-1", v1, OutcomeOK, 0, 10),
				write(0, KindRegister, "vol-1", v1b, OutcomeOK, 20, 30),
				read(1, "vol-1", OutcomeOK, v1, 40, 50),
				write(2, KindRegister, "vol-2", v2, OutcomeOK, 0, 10), // fine on its own
				read(2, "vol-2", OutcomeOK, v2, 40, 50),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			viz := filepath.Join(t.TempDir(), "linearizability.html")
			res, err := Linearizable(tc.history, viz, 0)
			must.NoError(t, err)
			must.EqOp(t, tc.ok, res.OK, must.Sprint(res))
			if tc.ok {
				must.EqOp(t, "", res.VisualizationPath)
				_, err := os.Stat(viz)
				must.True(t, os.IsNotExist(err), must.Sprint("a visualisation was written for a linearizable history"))
				return
			}
			must.EqOp(t, viz, res.VisualizationPath)
			must.FileExists(t, viz)
			must.Eq(t, []string{"vol-1"}, res.Failed, must.Sprint("only vol-1's history is at fault"))
		})
	}
}

func TestLinearizable_Counts(t *testing.T) {
	res, err := Linearizable([]Operation{
		write(0, KindRegister, "vol-1", v1, OutcomeIndeterminate, 0, never),
		write(0, KindRegister, "vol-2", v2, OutcomeRefused, 0, 10),
		read(1, "vol-1", OutcomeIndeterminate, Value{}, 0, never),
		read(1, "vol-3", OutcomeNotFound, Value{}, 0, 10),
	}, "", 0)
	must.NoError(t, err)
	must.Eq(t, LinearResult{OK: true, Checked: 2, Indeterminate: 1, Dropped: 2, Volumes: 2}, res)
}

// TestLinearizable_RandomSequentialIsLinearizable simulates clients whose
// operations take effect at a random instant inside their interval, on a
// sequential table, some with lost answers: every such history passes.
func TestLinearizable_RandomSequentialIsLinearizable(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	type timed struct {
		op     Operation
		effect int64
	}
	var ops []timed
	for client := range 6 {
		at := int64(0)
		for range 40 {
			call := at + rng.Int63n(20)
			ret := call + 1 + rng.Int63n(50)
			op := Operation{Client: client, VolumeID: []string{"vol-1", "vol-2"}[rng.Intn(2)], Call: call, Return: ret}
			op.Kind = []Kind{KindRegister, KindDeregister, KindRead, KindRead}[rng.Intn(4)]
			if op.Kind == KindRegister {
				op.Input = []Value{v1, v1b, v2}[rng.Intn(3)]
			}
			ops = append(ops, timed{op: op, effect: call + rng.Int63n(ret-call+1)})
			at = ret + 1
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].effect < ops[j].effect })
	table := map[string]volumeState{}
	history := make([]Operation, 0, len(ops))
	for _, o := range ops {
		op := o.op
		in := modelInput{volumeID: op.VolumeID, kind: op.Kind, value: op.Input}
		for _, out := range []Outcome{OutcomeOK, OutcomeNotFound, OutcomeConflict} {
			if op.Kind == KindRead && out == OutcomeOK {
				if ok, _ := step(table[op.VolumeID], in, modelOutput{outcome: out, value: table[op.VolumeID].value}); ok {
					op.Outcome, op.Output = out, table[op.VolumeID].value
					break
				}
				continue
			}
			if ok, next := step(table[op.VolumeID], in, modelOutput{outcome: out}); ok {
				op.Outcome, table[op.VolumeID] = out, next
				break
			}
		}
		if op.Kind != KindRead && rng.Intn(8) == 0 {
			op.Outcome = OutcomeIndeterminate // the answer was lost
		}
		history = append(history, op)
	}

	res, err := Linearizable(history, filepath.Join(t.TempDir(), "viz.html"), 0)
	must.NoError(t, err)
	must.True(t, res.OK, must.Sprint(res))
	must.Positive(t, res.Indeterminate)

	for i := len(history) - 1; i >= 0; i-- { // one impossible read breaks it
		if history[i].Kind == KindRead {
			history[i].Outcome, history[i].Output = OutcomeOK, Value{Immutable: "ext-never-written"}
			break
		}
	}
	res, err = Linearizable(history, "", 0)
	must.NoError(t, err)
	must.False(t, res.OK, must.Sprint(res))
}
