package chaos

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// The types of this file are a stand-in for those internal/chaos/check
// will provide; Op keeps to plain fields so that moving to them is a
// rename.

// OpKind is what an operation did.
type OpKind string

// The operations of the workload.
const (
	OpRegister   OpKind = "register"
	OpDeregister OpKind = "deregister"
	OpRead       OpKind = "read"
)

// Result is how an operation ended, as far as its caller can know.
type Result string

const (
	// ResultOK: acknowledged. For a read, Present says what it saw.
	ResultOK Result = "ok"
	// ResultFail: refused for certain; the operation had no effect (a 4xx
	// answer, or the connection refused before anything was sent).
	ResultFail Result = "fail"
	// ResultUnknown: no answer, or an answer that does not say whether
	// the write happened (503, 500, a timeout, a broken connection). The
	// write may take effect at any time after Call.
	ResultUnknown Result = "unknown"
)

// Op is one operation of the workload as its caller saw it.
type Op struct {
	Worker  int
	Kind    OpKind
	Volume  string // the volume ID
	Server  string // the server's name that was asked
	Call    time.Time
	Return  time.Time
	Result  Result
	Present bool   // reads that returned ResultOK: the volume was there
	Status  int    // the HTTP status of an error answer; 0 when none came
	Err     string // the error, "" when ResultOK
}

// History is the operations of a run, appended concurrently.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records op.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns a copy of the operations recorded so far, in the order they
// returned.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// WriteJSONLines writes the operations to path, one JSON object a line.
func (h *History) WriteJSONLines(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, op := range h.Ops() {
		if err := enc.Encode(op); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}
