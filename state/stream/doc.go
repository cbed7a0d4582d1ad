// Package stream is the event broker of berth's event stream: a bounded
// ring of the state's change events (state.EventSink), in raft index
// order, that subscribers long-poll for the events after an index. The
// ring is bounded by a count of events and by what their payloads weigh
// (a plugin's or a volume's grows with the cluster); an answer carries a
// quarter of that at most, so that it fits in one RPC message.
//
// The FSM owns the broker (fsm.FSM.Events), so that it outlives the state
// stores a snapshot restore replaces: the state package publishes each
// write's events into it, and a restore, which cannot be told as events,
// moves the broker's floor past every index a subscriber may hold.
//
// Resume: a subscriber asks for the events after index N. The broker holds
// every event after its floor; N at or above the floor resumes exactly,
// N below it is refused with a structs.CodeGone error that names the
// oldest index to resume from, and says to list the objects again and
// resume after that index, or the list's if higher (a list's index is its
// tables' last change, which may be below it). The ring drops the oldest
// raft entry's events whole, never part of an entry, and an answer never
// splits an entry's events, so resuming after the last index received
// loses none.
//
// It imports structs only; it must never import state, fsm or server.
//
// Concurrency: Publish and Restore come from the FSM's apply goroutine;
// Next may be called from any number of goroutines. One mutex guards the
// ring; waiters sleep on a channel that each Publish and Restore closes
// and replaces.
package stream
