// Package gc is the leader's garbage collection: every Config.Interval it
// lists what the state's rules allow removing (state/gc_rules.go:
// allocations over on their client and holding no claim that is not
// freed, stopped or done jobs with no allocation left, down nodes, freed
// past claims) and removes it, Config.BatchRows rows per raft write
// (Config.Apply). Collect makes one pass with the cutoffs given; All is a
// pass with every threshold at zero (System.GarbageCollect).
//
// The FSM must not read a clock, so ages are raft indexes: the leader
// remembers when it saw the store reach each index (witness), and a row
// whose ModifyIndex is at or below the index it saw a threshold ago has
// not changed since. A new leader knows only the indexes it has seen
// itself: it counts every older row's age from when it took office, so a
// failover can delay a collection by a threshold, never hasten one; so
// does a snapshot restore, which replaces the store and its history.
//
// Imports: structs, state, internal/backoff and internal/clock; never
// package server, which supplies Config and runs Run while it leads.
//
// Concurrency: Run is one goroutine, which ends with its context; Collect
// may run beside it (a manual collection), each write being checked again
// by the FSM at its apply. Both read the state store (lock-free) and write
// only through Config.Apply. Time comes only from Config.Clock, so tests
// drive it.
package gc
