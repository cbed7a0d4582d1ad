package check

import (
	"sync"
	"time"
)

// A Recorder collects the workload's operations, stamping invocation and
// response times from one monotonic clock. It is safe for concurrent use.
type Recorder struct {
	start time.Time

	mu      sync.Mutex
	ops     []Operation
	pending map[int]bool // indices into ops not yet returned
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now(), pending: map[int]bool{}}
}

// Now is the recorder's clock: nanoseconds since it started, read from the
// monotonic clock so a wall-clock step cannot reorder operations.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Invoke records op as called now and returns its ID for Return. op's
// Outcome, Output, Call and Return are set by the recorder.
func (r *Recorder) Invoke(op Operation) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Call = r.Now()
	op.Return, op.Outcome, op.Output = 0, 0, Value{}
	r.ops = append(r.ops, op)
	id := len(r.ops) - 1
	r.pending[id] = true
	return id
}

// Return records the answer to the operation id, now. A second Return for
// the same id, or one for an unknown id, is ignored.
func (r *Recorder) Return(id int, outcome Outcome, output Value) {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pending[id] {
		return
	}
	delete(r.pending, id)
	r.ops[id].Outcome, r.ops[id].Output, r.ops[id].Return = outcome, output, now
}

// History returns a copy of the operations recorded so far, in invocation
// order. Operations not yet returned are indeterminate: the caller may
// have been killed, or gave up, with the write in flight.
func (r *Recorder) History() []Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Operation, len(r.ops))
	copy(out, r.ops)
	for id := range r.pending {
		out[id].Outcome, out[id].Return = OutcomeIndeterminate, 0
	}
	return out
}
