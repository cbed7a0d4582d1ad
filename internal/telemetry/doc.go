// Package telemetry is an agent's metrics: one Prometheus registry that
// holds the Go runtime's and the process's collectors, berth's own
// metrics, and, through go-metrics sinks, every metric the agent's
// libraries emit: raft, serf and memberlist through hashicorp/go-metrics,
// raft-boltdb through go-metrics' compat API (armon/go-metrics in this
// build). docs/metrics.md lists berth's own.
//
// berth's metrics are defined once, here: the counters and histograms
// that the recording packages (rpc, server, server/volumewatcher,
// client/csi, the HTTP API) update as work happens (metrics.go), and the
// gauges a server reports at scrape time from its state store
// (ServerCollector, gauges.go; the server supplies the read). Their names
// follow Prometheus' conventions: berth_<subsystem>_<name>, the unit in
// the name, _total on counters; their labels are bounded (method, code,
// plugin ID, route pattern, state: never a volume, allocation or node ID).
//
// It imports the prometheus client and go-metrics, nothing of berth's.
//
// Concurrency: the metrics in metrics.go are process-global and safe for
// concurrent use; New registers them into each registry it makes (several
// agents in one test process each get one). New also sets the go-metrics
// globals: the last registry made receives the libraries' metrics.
package telemetry
