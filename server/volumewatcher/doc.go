// Package volumewatcher drives every CSI volume claim being released to
// freed. It runs on the leader only (Run for the length of a term) and
// moves each past claim one state at a time:
//
//	unpublishing        -> the claiming client unpublishes and unstages the
//	                       volume (Deps.NodeDetach; skipped when the node
//	                       is down or gone)
//	node-detached       -> a healthy controller instance unpublishes it from
//	                       the node, when the plugin publishes
//	                       (Deps.ControllerDetach)
//	controller-detached -> freed (the claim is removed)
//
// Each step's outcome is checkpointed through raft (Deps.ApplyClaims), so
// a new leader resumes where the old one stopped. A failed step records
// LastError, one more Attempts and NextAttemptAt = now + the backoff for
// that attempt (Config.Backoff: 1s doubling to a minute, jitter only
// shortening it), and is tried again once the clock passes NextAttemptAt.
// A step whose term ends mid-way is not checkpointed: the next leader
// makes it again.
//
// The watcher reads only the volumes with a claim being released (the
// state store's releasing conditional index) and wakes on a change to
// them, on Kick, or at the earliest NextAttemptAt (or after Config.Idle).
//
// A failed step counts in berth_csi_claim_release_retries_total, by the
// claim's state (internal/telemetry).
//
// Imports: structs, state, internal/backoff, internal/clock and
// internal/telemetry; never package server, which supplies Deps and
// starts Run.
//
// Concurrency: Kick is safe from any goroutine. Run must not run twice at
// once; it makes each due claim's step on its own goroutine, at most one
// per claim, and returns once its context has ended and those steps have
// returned. Time comes only from Config.Clock, so tests drive it.
package volumewatcher
