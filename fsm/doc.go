// Package fsm is berth's raft.FSM: it decodes committed raft entries and
// applies them to the state store, and it persists and restores snapshots
// of every state table.
//
// It imports structs and state, never server, rpc or client. It must be
// deterministic: every server applies the same entries to the same state
// and must reach the same tables, so nothing here reads the clock, makes
// random values or does I/O beyond the snapshot streams raft hands it.
//
// It owns the event stream's broker (state/stream, Events): every state
// store it holds publishes each write's change events into it, so the
// broker outlives the stores a Restore replaces, and a Restore tells it
// that the subscribers before it must list again.
//
// Concurrency: raft calls Apply, Snapshot and Restore from one goroutine.
// State() may be called from any goroutine; after a Restore it returns the
// new store, and the old one's AbandonCh is closed so blocked readers retry.
package fsm
