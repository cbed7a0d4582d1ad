// Package drainer is the leader's node drainer: it empties the nodes
// being drained, in an order that keeps volumes safe (step.go):
//
//  1. service and batch allocations (and any other that uses volumes),
//     at most migrate { max_parallel } of a group in flight at once;
//     the job watcher places their replacements elsewhere, since the
//     node is not schedulable, and the volumewatcher frees their claims
//     once their client reports them dead, while the node's CSI plugin
//     still runs to unpublish and unstage;
//  2. CSI plugin allocations, once no claim on the node is left;
//  3. the other system jobs' allocations (none with IgnoreSystemJobs).
//
// At the drain's deadline whatever remains is stopped at once (the CSI
// plugins once their claims are released, or Config.PluginGrace later).
// When nothing is left to stop the drain is complete. Each step is one
// raft write with a node event (Config.Apply), which `berth node drain
// -monitor` shows.
//
// It is driven by the state: every pass registers watches on what it
// read (the nodes table, each draining node, its allocations, its claims,
// the jobs it migrates) and runs again when one fires, or at the next
// deadline, on the injected clock.
//
// Imports: structs, state, internal/backoff and internal/clock; never
// package server, which supplies Config and runs Run while it leads.
//
// Concurrency: Run is one goroutine, which ends with its context; it
// alone touches the drainer's memory of the nodes it drains. It reads
// the state store (lock-free) and writes only through Config.Apply. Time
// comes only from Config.Clock, so tests drive it.
package drainer
