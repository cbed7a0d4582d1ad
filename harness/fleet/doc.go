// Package fleet is berth's fleet simulator: three berth servers as real
// processes on loopback, and N client nodes played inside the test
// process over the real RPC path, measured at scale and printed as one
// table by TestFleet (`make fleet NODES=N`). It is a test harness:
// nothing in berth imports it.
//
// What it owns:
//   - Cluster: bin/berth built once into a temp dir; three server agents,
//     each bound to its own loopback address (127.0.0.71, .72, .73,
//     -bootstrap-expect 3, -enable-debug), with
//     server { max_heartbeats_per_second } from a config file. The
//     simulated nodes dial from 127.0.0.74. The chaos suite has .11-.13,
//     .31 and .32, other process tests .21 and .41-.43, the load tool
//     .51-.53 and .61, so the suites may run at once. Every server is
//     started and stopped by its PID alone (harness/agentproc), and
//     writes its own log file into a temp dir the test prints.
//   - Fleet: the simulated nodes. Each has its own node ID and node
//     secret (the AuthToken of every call it makes, as a client agent
//     sends it) and registers (Node.Register) with status ready and the
//     fingerprint of two CSI plugins, "fleet-mono" (controller and node
//     side, healthy) and "fleet-node" (node side only), and the exec and
//     docker drivers healthy. Then it heartbeats (Node.UpdateStatus) as
//     client/heartbeat.go does: every TTL/6 to TTL/4 of the TTL the last
//     answer handed out, with the client's backoff while calls fail. A
//     share of the nodes flaps fleet-node's health through
//     Node.UpdateFingerprint. The nodes share a few yamux sessions (rpc
//     Pool, msgpack), spread over the three servers, as many nodes a
//     session: a server tracks a node's session by node ID on each
//     answered call that carries the node's secret, and calls the node
//     back over it naming the node in the request, so a shared session
//     serves every node it carries (ClientStatus.Ping answers for the
//     node named). AllocWatch is the nodes' blocking Node.GetClientAllocs,
//     as client/alloc_watcher.go's.
//   - Events: the event stream (topics Node and CSIVolume) at a
//     follower, recording when the servers marked each node down and
//     freed each claim, from the stamps the servers put on them.
//   - The measures: CPUTime (/proc/PID/stat), Recorder (latencies over a
//     window), and, from harness/loadtest, RSS, Table and Latencies.
//
// TestFleet's phases: register every node (nodes/s with a fixed number
// of concurrent registrars); wait until every node heartbeats on the
// whole fleet's TTL; the steady window (heartbeats/s answered, the TTL,
// the leader's CPU, the calls' latencies, and false node-downs: none may
// happen); the plugin status routes at the leader, and the counts they
// show; a server calling nodes back over their shared session; volumes of
// fleet-node claimed on the nodes to cut (a service job constrained by
// meta fleet_cut; a claim is reserved when its allocation is placed); a
// system job of one docker task, until every node's own watch shows its
// allocation; then a tenth of the nodes stop heartbeating, until the
// servers marked each down and freed their claims (a down node's detach
// is skipped, and fleet-node has no controller). Nothing is asserted
// about a speed figure; the correctness properties are: every node
// registered and listed ready, no node marked down while it heartbeated
// (the event stream, and berth_node_heartbeat_misses_total summed over
// the servers from before the first node: exactly the cut nodes), the
// plugin counts equal to the fleet, the system job on every node, every
// cut node down and every claim on them freed. The table is printed
// before the test fails on any of them.
//
// It is in the harness layer: it may import any berth package, and no
// package outside harness/ may import it (see internal/tools/importcheck).
// TestFleet skips with -short and where it is not root, as the other
// process harnesses do.
//
// Concurrency: Fleet's nodes each run their own goroutines (heartbeat,
// flap, allocation watch) from Register until Cut or Stop; the counters,
// Recorders, Events and AllocWatch are safe for concurrent use. Cluster
// belongs to the test goroutine.
package fleet
