// Package aclreap deletes expired ACL tokens on the leader: once when it
// takes office, then every Config.Interval (a minute, for the server),
// all the tokens expired at that time in one raft write
// (Config.Delete). An expired token is refused anyway; this keeps the
// table from growing with them. Tokens Config.Keep names (the leader's
// own) are never deleted.
//
// Imports: structs, state and internal/clock; never package server,
// which supplies Config and runs Run while it leads.
//
// Concurrency: Run is one goroutine, which ends with its context; it
// reads the state store (lock-free) and writes only through
// Config.Delete. Reap may be called from any goroutine. Time comes only
// from Config.Clock, so tests drive it.
package aclreap
