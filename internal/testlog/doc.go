// Package testlog routes hclog output to testing.TB.Log, and drops lines
// that arrive after the test ended (raft and gossip goroutines may log
// while they stop). It is for tests only.
package testlog
