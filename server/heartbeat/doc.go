// Package heartbeat holds the leader's per-node heartbeat TTL timers and
// marks a node down when its timer fires.
//
// Only the leader runs timers (Arm(true) once it serves consistent reads,
// Disable when its leadership ends); off the leader Reset and Arm(false)
// do nothing, so a follower never marks a node down. A client's heartbeat
// restarts its node's timer (Reset, with the TTL the client was told); a
// node deregistered or collected loses it (Clear); a new leader, and a
// leader whose state a snapshot restore replaced, starts one per node
// that is not down, for TTL plus Grace, so that clients have time to find
// it (Arm). A timer that fires marks its node down through
// Config.MarkDown (the raft write in which its plugin instances stop
// counting as healthy and its volumes become unschedulable) and counts a
// miss in berth_node_heartbeat_misses_total; a write that fails is tried
// again one TTL on, while the server still leads.
//
// Imports: structs, state, internal/clock and internal/telemetry; never
// package server, which supplies Config and calls the methods.
//
// Concurrency: every method is safe from any goroutine. While enabled,
// one goroutine waits on Config.Clock for the earliest deadline (the
// timers are a heap of deadlines, not a goroutine each); each node whose
// deadline passes is marked down on a goroutine of its own, as a
// time.AfterFunc timer's function runs. Disable stops that goroutine and
// waits for it, not for a mark-down under way (one that has not yet
// started finds the timers off and does nothing). Time comes only from
// Config.Clock, so tests run it in a synctest bubble or on a fake.
package heartbeat
