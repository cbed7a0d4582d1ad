// Package chaos runs berth as real processes under injected faults and
// records what a workload saw, for the checkers of internal/chaos/check
// (issue 13). It is a test harness: nothing in berth imports it.
//
// What it owns:
//   - Cluster: bin/berth and berth-hostpath built once into a temp dir;
//     three server agents, each bound to its own loopback address
//     (127.0.0.11, .12, .13), and two client agents (127.0.0.31, .32)
//     running berth-hostpath as a plugin system job (allow_root_tasks).
//     Every process is started, signalled and killed by its PID alone,
//     never by name; each writes its own log file. The test's cleanup
//     heals every partition, kills the agents and the tasks they left,
//     and detaches what stayed mounted under the clients' data dirs.
//   - Nemesis: one fault at a time, drawn from a seeded math/rand/v2
//     source and logged with its time: kill -9 and restart of the leader,
//     of a follower or of a client agent; SIGSTOP/SIGCONT of the leader;
//     the leader cut off from every other agent with iptables, always
//     healed after a random interval and again at cleanup.
//   - Workload: 2-4 goroutines that register, read and deregister volumes
//     through the HTTP API (package api) at random servers, and History,
//     the operations they made with call and return times and results.
//
// Deviations from issue 13, on purpose:
//   - The clients are on 127.0.0.31 and .32, not .21 and .22: 127.0.0.21
//     belongs to the partition tests of cmd/berth, which may run at the
//     same time.
//   - Servers dial each other from the system's choice of source address
//     (127.0.0.1), not from their bind address; only clients dial from
//     theirs (rpc.WithLocalIP). Rules by -s/-d address pairs alone cannot
//     cut off a server's own dials, so each server runs with its own gid
//     and the partition adds OUTPUT rules by owner (-m owner --gid-owner)
//     for the servers' traffic next to the address pairs.
//
// It must not be imported by any berth package; it may import any (see
// internal/tools/importcheck). The tests skip unless BERTH_CHAOS=1, and
// where root or iptables is missing. `make chaos ROUNDS=n SEED=s` runs
// TestChaos_Short for n rounds (-rounds, default 100; -seed 0 draws a
// seed from the clock, and the test prints it to replay). The process
// logs and the history (history.jsonl) are kept in a temp dir whose path
// the test prints.
//
// Concurrency: Cluster and Nemesis belong to the test goroutine; the
// workload's goroutines share only History (guarded by its mutex) and
// the servers' addresses, which never change after Start.
package chaos
