// Package server is a berth server: raft (hashicorp/raft with raft-boltdb
// logs and file snapshots in the data dir), server membership by serf
// gossip with autopilot removing dead servers, the msgpack RPC endpoints,
// write forwarding to the leader, blocking queries, and the wiring of the
// leader-only loops, each a package of its own under server/ (scheduler,
// volumewatcher, heartbeat, drainer, gc, aclreap; keyreplicate runs on
// every server).
//
// The RPC API is in the files named rpc_<service>[_<part>].go, one or a
// few per service (rpc_job.go, rpc_csi_volume.go, rpc_node_drain.go, ...):
// `ls server/rpc_*` lists it. rpc_table.go says, for every method, which
// server answers it and who may call it; one interceptor applies that
// before the method runs (rpc_register.go registers the services and
// checks the table against them). rpc.go holds forwarding and blocking
// queries.
//
// It composes structs, state, fsm and rpc; nothing in berth imports it but
// cmd and servertest. The client package must never import it.
//
// Metrics (internal/telemetry, metrics.go and metrics_state.go): raft apply
// latency by message type (raftApply), the FSM's apply latency (timedFSM
// wraps the FSM raft is given: package fsm never reads the clock), new
// leaders seen (a raft observer), heartbeat misses (server/heartbeat),
// and at scrape time (MetricsCollector) the commit index and, on the
// leader only, claims by state, the oldest release, plugin health and
// volumes by schedulability.
//
// The event stream (rpc_event.go): Event.Next long-polls the FSM's
// event broker (state/stream) on this server, never forwarded, checking
// the caller's token against each topic at every poll.
//
// Concurrency: a Server owns its goroutines (the accept loop, the serf
// event loop, the leadership monitor and what leadership starts) and stops
// them all in Shutdown through one lifecycle context. RPC endpoints run on
// the rpc server's goroutines and touch shared state only through raft
// (writes) and the FSM's state store (reads, which are lock-free memdb
// snapshots).
package server
