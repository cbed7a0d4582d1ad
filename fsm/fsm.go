package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/stream"
	"github.com/berth-csi/berth/structs"
)

// Errors of the FSM itself; state errors pass through unchanged.
var (
	ErrEmptyEntry     = errors.New("fsm: empty raft entry")
	ErrUnknownMessage = errors.New("fsm: unknown message type")
	ErrMalformedEntry = errors.New("fsm: malformed raft entry")
)

// applyFn applies one decoded entry at a raft index and returns what the
// caller of raftApply receives: nil, an error, or a typed result.
type applyFn func(f *FSM, index uint64, buf []byte) any

// FSM applies raft entries to a state store.
type FSM struct {
	logger hclog.Logger

	mu    sync.RWMutex
	state *state.StateStore

	// events is the event stream's broker: every state store this FSM
	// holds publishes into it, so it outlives a restore (events.go).
	events *stream.Broker

	// applied is the index of the last command entry applied, or, after a
	// restore, the last index the restored tables record: what a read
	// served from this state has seen (see AppliedIndex). appliedCh is
	// closed and replaced each time it moves (WaitApplied).
	applied   atomic.Uint64
	appliedMu sync.Mutex
	appliedCh chan struct{}
}

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM over an empty state store.
func New(logger hclog.Logger) (*FSM, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	st, err := state.NewStateStore()
	if err != nil {
		return nil, fmt.Errorf("fsm: new state store: %w", err)
	}
	events := stream.New(stream.DefaultSize)
	st.SetEventSink(events)
	return &FSM{logger: logger.Named("fsm"), state: st, events: events}, nil
}

// State returns the current state store.
func (f *FSM) State() *state.StateStore {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// Apply decodes and applies one committed entry. A malformed or unknown
// entry returns an error value; it never panics, and it writes nothing.
func (f *FSM) Apply(log *raft.Log) any {
	if log.Type != raft.LogCommand {
		return nil
	}
	res := f.ApplyEntry(log.Index, log.Data)
	f.setApplied(log.Index)
	return res
}

// setApplied moves the applied index and wakes WaitApplied.
func (f *FSM) setApplied(index uint64) {
	f.appliedMu.Lock()
	defer f.appliedMu.Unlock()
	f.applied.Store(index)
	if f.appliedCh != nil {
		close(f.appliedCh)
		f.appliedCh = nil
	}
}

// WaitApplied waits until AppliedIndex reaches index, or ctx ends.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		f.appliedMu.Lock()
		if f.applied.Load() >= index {
			f.appliedMu.Unlock()
			return nil
		}
		if f.appliedCh == nil {
			f.appliedCh = make(chan struct{})
		}
		ch := f.appliedCh
		f.appliedMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AppliedIndex is the index of the last command entry this FSM applied
// (after a restore: the last index its tables record). Unlike
// raft.AppliedIndex, which moves when entries are handed to the FSM, it
// moves only once the state store shows the entry's effect.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// ApplyEntry applies a raw entry (type byte then msgpack) at index.
func (f *FSM) ApplyEntry(index uint64, data []byte) any {
	if len(data) == 0 {
		return fmt.Errorf("%w at index %d", ErrEmptyEntry, index)
	}
	t := structs.MessageType(data[0])
	fn, ok := dispatch[t]
	if !ok {
		f.logger.Error("unknown message type", "type", t, "index", index)
		return fmt.Errorf("%w %s at index %d", ErrUnknownMessage, t, index)
	}
	return fn(f, index, data[1:])
}

// decode reads an entry's body, naming the message type on failure.
func decode(t structs.MessageType, index uint64, buf []byte, out any) error {
	if err := structs.Decode(buf, out); err != nil {
		return fmt.Errorf("%w: %s at index %d: %v", ErrMalformedEntry, t, index, err)
	}
	return nil
}
