// Package telemetry is an agent's metrics: one Prometheus registry that
// holds the Go runtime's and the process's collectors and, through a
// go-metrics sink, every metric the agent's libraries emit (raft, serf,
// memberlist: hashicorp/go-metrics' compat API, which is armon/go-metrics
// in this build) and berth's own, which use the same API.
//
// It imports the prometheus client and go-metrics, nothing of berth's.
// New sets go-metrics' global sink: call it once per process (the agent
// does); a second call replaces the first's sink.
package telemetry
