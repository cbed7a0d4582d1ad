package check

import (
	"fmt"
	"net/http"
)

// Kind is what an operation does to the volume table.
type Kind uint8

// The operation kinds.
const (
	KindRegister   Kind = iota + 1 // register a volume, or update a registered one
	KindDeregister                 // deregister a volume
	KindRead                       // read a volume
)

// String names k.
func (k Kind) String() string {
	switch k {
	case KindRegister:
		return "register"
	case KindDeregister:
		return "deregister"
	case KindRead:
		return "read"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Outcome is what the caller learned of an operation.
type Outcome uint8

// The outcomes. OK, NotFound and Conflict are answers about the state and
// are checked against the model. Refused operations did not touch the state
// and are dropped. Indeterminate writes may or may not have happened;
// indeterminate reads say nothing and are dropped.
const (
	OutcomeOK            Outcome = iota + 1 // 2xx; for a read, the volume was found
	OutcomeNotFound                         // 404: a read or deregister found no volume
	OutcomeConflict                         // 409: the state refused it (immutable field changed, volume claimed)
	OutcomeRefused                          // a definite failure that did not read the table (400, 403)
	OutcomeIndeterminate                    // timeout, connection lost, 5xx, or never returned
)

// String names o.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeNotFound:
		return "not-found"
	case OutcomeConflict:
		return "conflict"
	case OutcomeRefused:
		return "refused"
	case OutcomeIndeterminate:
		return "indeterminate"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// OutcomeFromStatus maps an HTTP status to an outcome. A request that got
// no status at all (timeout, connection reset) is OutcomeIndeterminate; so
// is every 5xx, since the write may have been applied before the answer was
// lost.
func OutcomeFromStatus(status int) Outcome {
	switch {
	case status >= 200 && status < 300:
		return OutcomeOK
	case status == http.StatusNotFound:
		return OutcomeNotFound
	case status == http.StatusConflict:
		return OutcomeConflict
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return OutcomeRefused
	}
	return OutcomeIndeterminate
}

// Value is what the model keeps of a registered volume, condensed by the
// harness into strings. Immutable stands for the fields an update may not
// change (plugin, external ID, name, parameters): registering a volume
// again with another Immutable is a conflict. Mutable stands for the fields
// an update replaces (capabilities, mount options, context, ...).
//
// An Immutable must belong to one volume ID for the whole run: berth
// refuses a volume whose external ID another volume holds, and that
// conflict crosses the per-volume partition the model checks.
type Value struct {
	Immutable string
	Mutable   string
}

// String renders v as immutable/mutable.
func (v Value) String() string { return v.Immutable + "/" + v.Mutable }

// An Operation is one call of the workload on the volume table, with the
// times it was invoked and answered on the recorder's clock.
//
// Register a single volume per request: a multi-volume register is all or
// nothing across volumes, which the per-volume model cannot see. Record
// only reads that berth promises to be current (not stale reads).
type Operation struct {
	Client   int    // the caller: one ID per workload goroutine, from 0
	Server   string // the server the call went to, for the visualisation
	Kind     Kind
	VolumeID string
	Input    Value // for a register: the volume written
	Outcome  Outcome
	Output   Value // for a read answered OK: the volume read
	Call     int64 // invocation, in nanoseconds
	Return   int64 // response, in nanoseconds; ignored when indeterminate
}

// String renders op for logs and the visualisation.
func (op Operation) String() string {
	switch op.Kind {
	case KindRegister:
		return fmt.Sprintf("register(%s, %s) -> %s", op.VolumeID, op.Input, op.Outcome)
	case KindRead:
		if op.Outcome == OutcomeOK {
			return fmt.Sprintf("read(%s) -> %s", op.VolumeID, op.Output)
		}
	}
	return fmt.Sprintf("%s(%s) -> %s", op.Kind, op.VolumeID, op.Outcome)
}
