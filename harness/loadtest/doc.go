// Package loadtest is berth's load tool: it runs berth as real processes
// on loopback and measures throughput (registers/s, claims/s), list
// latency, leader re-election time and memory per volume, printed as one
// table by TestLoad (`make loadtest`). It is a test harness: nothing in
// berth imports it.
//
// What it owns:
//   - Cluster: bin/berth built once into a temp dir; three server agents,
//     each bound to its own loopback address (127.0.0.51, .52, .53,
//     -bootstrap-expect 3), and one client agent (127.0.0.61) with the
//     csi-test mock driver registered as an external monolith plugin
//     (plugin "mock") by its socket. The chaos suite has .11-.13, .31 and
//     .32, other process tests .21 and .41-.43, so the suites may run at
//     once. Every agent is started and killed by its PID alone, never by
//     name, and writes its own log file into a temp dir the test prints;
//     the mock driver's last lines are copied there too. The test's
//     cleanup stops every agent and kills the tasks the client left.
//   - Pool: storage volumes made in the mock ahead of the runs, through
//     its controller socket (package client/csi), because the mock
//     confirms the capabilities of no volume it did not make: every
//     register names one. The registers' pool is made first: the mock
//     finds a volume by a linear scan of the ones it made, so its lookups
//     stay cheap however many the fill made after them.
//   - The runs: RegisterRun (new volumes, each on a storage volume of the
//     pool; Deregister puts them back), ClaimRun, Fill, ListLatency
//     (through package api, decoded, and to the last byte undecoded),
//     KillLeader, RSS (VmRSS from /proc). A run is N callers calling as
//     fast as their answers come, for a duration; its rate is the calls
//     that succeeded over the time until the last one returned.
//
// Claims: a claim must name an allocation whose group asks for the
// volume, and a released claim cannot be taken again, so the claim runs
// renew the write claims of running allocations: a job of -claim-allocs
// allocations, each with its own per_alloc volume ("lt-claim[N]") and a
// sleeping exec task; each request takes the claim again (state taken),
// which is one raft write. The mock runs with -disable-attach, so no
// claim waits on a ControllerPublishVolume through the client: the
// figure is the servers' write path alone.
//
// Writes and the RSS are measured at the leader; lists at the leader,
// through a follower (forwarded to the leader) and through a follower
// with ?stale. Nothing is asserted about a figure, only that every step
// worked: no request failed (the api client retries 503s and counts
// them), every list held every volume, a new leader came after each kill
// and the restarted server caught up, and every server ends with every
// volume. `make loadtest` runs it without the race detector, so that the
// driver's own cost stays small; `make test` runs it with small counts.
//
// TestLatency (`make latency`) starts the cluster without the external
// mock (Options.PluginTask): it runs the mock as plugin tasks (PluginJob),
// times volume creates against registers and the first list after a
// burst of creates, and runs the claim workflow (ClaimCycle: job run until
// running, job stop until the claim is freed, each waited for by blocking
// queries at a follower), reading each cycle's timeline from the
// allocation and its freed claim (structs.Timeline).
//
// It is in the harness layer: it may import any berth package, and no
// package outside harness/ may import it (see internal/tools/importcheck).
// TestLoad skips where it is not root (the
// claiming tasks run with the exec driver) and with -short.
//
// Concurrency: Cluster belongs to the test goroutine, but for the API
// clients, the counters and Pool (guarded by its mutex), which the
// callers of a run share; agents' addresses never change after start.
package loadtest
