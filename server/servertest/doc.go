// Package servertest starts real berth servers for tests: real raft with
// boltdb files in temp dirs, real TCP and gossip on 127.0.0.1.
//
// Servers stop when the test ends; Kill and Restart stop and start one in
// place (same data dir and ports) to show failover and catch-up. WithTLS,
// with a tlsutiltest.PKI, gives a cluster mutual TLS and gossip
// encryption. It imports server and may be imported only by tests.
package servertest
