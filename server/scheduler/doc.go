// Package scheduler places jobs' allocations: the planner, which plans a
// job's missing allocations on ready nodes that can mount every volume
// its groups ask for and reserves their claims in the same plan (so a
// placement and its claims land in one raft write), and the job watcher,
// which runs on the leader and places, unasked, what the cluster can now
// run.
//
// It imports structs and state (and go-memdb, hclog and the standard
// library); it must never import fsm, rpc, server or client. Package server
// wires it: the Job.Register endpoint calls a Planner, and the leader runs
// a JobWatcher while it leads, giving it the state store, a func that
// writes a plan through raft, the lock its endpoints plan under, a logger
// and a Clock.
//
// Concurrency: a Planner is safe for concurrent use, but two passes must
// not plan the same claim: callers hold one lock around a pass and the
// raft write of its plan (the server's planMu). A JobWatcher's Run is one
// goroutine, which ends with its context; it takes that lock for each
// job it plans. Both read the state store, which is lock-free, and write
// only through the func they are given.
//
// Time comes from the injected Clock: claim timestamps (Now) and the job
// watcher's waits (After), so tests drive both.
package scheduler
