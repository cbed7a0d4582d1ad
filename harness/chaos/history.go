package chaos

import (
	"encoding/json"
	"errors"
	"os"
	"sync"

	"github.com/berth-csi/berth/harness/chaos/check"
)

// Op is one operation of the workload: check's record of it, with what
// the caller saw of the answer beyond its outcome.
type Op struct {
	check.Operation
	Status int    // the HTTP status of an error answer; 0 when none came
	Err    string // the error, "" when the call succeeded
}

// History is the workload's operations, recorded through a
// check.Recorder (whose clock stamps them) and safe for concurrent use.
type History struct {
	rec *check.Recorder

	mu      sync.Mutex
	answers map[int]answer // by recorder ID
}

type answer struct {
	status int
	err    string
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History {
	return &History{rec: check.NewRecorder(), answers: map[int]answer{}}
}

// Invoke records op as called now and returns its ID for Return.
func (h *History) Invoke(op check.Operation) int { return h.rec.Invoke(op) }

// Return records the answer to operation id: its outcome, the volume a
// read returned, the HTTP status of an error answer and the error.
func (h *History) Return(id int, outcome check.Outcome, output check.Value, status int, err error) {
	h.rec.Return(id, outcome, output)
	a := answer{status: status}
	if err != nil {
		a.err = err.Error()
	}
	h.mu.Lock()
	h.answers[id] = a
	h.mu.Unlock()
}

// Operations is the history for the checkers, in invocation order;
// operations not yet answered are indeterminate.
func (h *History) Operations() []check.Operation { return h.rec.History() }

// Ops is Operations with each answer's status and error.
func (h *History) Ops() []Op {
	hist := h.rec.History()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Op, len(hist))
	for i, op := range hist {
		a := h.answers[i]
		out[i] = Op{Operation: op, Status: a.status, Err: a.err}
	}
	return out
}

// jsonOp is an Op as history.jsonl holds it, kinds and outcomes by name;
// Call and Return are nanoseconds on the recorder's clock.
type jsonOp struct {
	Client   int
	Server   string
	Kind     string
	VolumeID string
	Input    check.Value `json:",omitzero"`
	Outcome  string
	Output   check.Value `json:",omitzero"`
	Call     int64
	Return   int64
	Status   int    `json:",omitempty"`
	Err      string `json:",omitempty"`
}

// WriteJSONLines writes the operations to path, one JSON object a line,
// in invocation order.
func (h *History) WriteJSONLines(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, op := range h.Ops() {
		err := enc.Encode(jsonOp{
			Client: op.Client, Server: op.Server, Kind: op.Kind.String(), VolumeID: op.VolumeID,
			Input: op.Input, Outcome: op.Outcome.String(), Output: op.Output,
			Call: op.Call, Return: op.Return, Status: op.Status, Err: op.Err,
		})
		if err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return f.Close()
}
