// Package chaos runs berth as real processes under injected faults and
// records what a workload saw, for the checkers of harness/chaos/check:
// linearizable volume operations, one writer at a time on a single-writer
// volume (in the claims and in the writers' own files), claims freed soon
// after their allocation ended, and every server ending with every
// acknowledged write. It is a test harness: nothing in berth imports it.
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
//     of a follower or of a client agent; kill -9 of a client's plugin
//     task or of a workload task (their client restarts them); SIGSTOP/
//     SIGCONT of the leader; iptables partitions: the leader cut off from
//     every other agent, one server (the leader or a follower) and one
//     client cut off from the rest, and one-way loss of what the leader
//     sends. Every fault is undone after a random 1-6 s, and partitions
//     again at cleanup.
//   - Workload: 2-4 goroutines that register, read and deregister volumes
//     through the HTTP API (package api) at random servers, and History,
//     the operations they made with call and return times and results.
//   - JobWorkload: on each job volume (a single-node-writer volume per
//     client and a multi-node-reader-only one), two jobs take turns, the
//     next one run as soon as the one before is stopped. Writers append
//     "allocID timestamp" lines to a file on the volume; half of them
//     trap SIGTERM and write on for about 2 s.
//   - Sampler: reads the job volumes' claims and the allocations from a
//     random server every 200 ms, for check.SingleWriter, and follows
//     each claim from its alloc's end to its freeing, for
//     check.TimeToFree.
//
// The clients are on 127.0.0.31 and .32, on purpose not .21 and .22:
// 127.0.0.21 belongs to the partition tests of cmd/berth, which may run at
// the same time. Every agent binds and dials from its own address, so
// partitions are -s/-d address pairs alone.
//
// It is in the harness layer: it may import any berth package, and no
// package outside harness/ may import it (see internal/tools/importcheck).
// The tests skip where root or iptables is missing, and TestChaos_Short
// unless BERTH_CHAOS=1. `make chaos ROUNDS=n SEED=s` runs TestChaos_Short for n rounds (-rounds, default
// 100; -seed 0 draws a seed from the clock, and the test prints it to
// replay); `make test` runs TestChaos_Seeded, one round of each fault
// kind for each seed that once found a defect. The process logs and the
// history (history.jsonl) are kept in a temp dir whose path the test
// prints.
//
// Concurrency: Cluster and Nemesis belong to the test goroutine; the
// workloads' and the sampler's goroutines share only their own records
// (each guarded by its mutex) and the agents' addresses, which never
// change after Start.
package chaos
