package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric berth defines, and the go-metrics ones.
const Namespace = "berth"

// Label values that several recorders share.
const (
	// CodeOK is the code label of a request that succeeded (RPC: no
	// error; CSI: gRPC's OK).
	CodeOK = "OK"
	// Other stands for a label value outside the bounded set (an HTTP
	// method no route serves, a path no route matched, an error code or
	// a gRPC code this version does not know).
	Other = "other"
)

// Label values of the blocking label: whether a request was a long poll
// (a blocking query with an index, Event.Next with a wait, the event
// stream), whose duration is mostly its wait for a change, not work.
const (
	Blocking    = "true"
	NotBlocking = "false"
)

// BlockingLabel is the blocking label's value for blocking.
func BlockingLabel(blocking bool) string {
	if blocking {
		return Blocking
	}
	return NotBlocking
}

var (
	// requestBuckets are the latency buckets of RPC and HTTP requests:
	// 500 µs (a read from memory) to two minutes (a server's call to a
	// client's CSI controller, a long poll's wait).
	requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 120}
	// raftBuckets are the raft apply's: 1 ms (a quorum on one host) to its
	// 30 s timeout.
	raftBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// csiBuckets are the CSI calls': 1 ms (Probe) to two minutes (the
	// servers' bound on a controller call; CreateVolume or
	// ControllerPublishVolume on a cloud provider can take minutes).
	csiBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	// fsmBuckets are the FSM apply's: 100 µs to a second.
	fsmBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, 1}
)

// Every metric berth records as things happen, process-global (the
// recording packages import this one) and registered into each registry
// New makes. Scrape-time gauges read from the state store are described by
// the Desc values in gauges.go.
var (
	RPCRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "rpc", Name: "requests_total",
		Help: "RPC requests this agent's RPC server dispatched to a method (a server's endpoints; on a client, those the servers call on it), over the network or in process, by method (Service.Method) and code: OK, or the error's code (NotFound, Conflict, Unavailable, ...).",
	}, []string{"method", "code"})
	RPCRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "rpc", Name: "request_duration_seconds",
		Help:    `Time this agent's RPC methods took, from dispatch to their answer, by method, code (as berth_rpc_requests_total) and blocking: "true" for a long poll (a blocking query with MinQueryIndex, Event.Next with a wait), whose time is mostly its wait; select blocking="false" for latency.`,
		Buckets: requestBuckets,
	}, []string{"method", "code", "blocking"})

	RaftApplyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "raft", Name: "apply_duration_seconds",
		Help:    "Time a write took on the leader from raft.Apply until the FSM answered it (committed by a quorum and applied), by message type; failed applies included.",
		Buckets: raftBuckets,
	}, []string{"type"})
	RaftLeaderChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "raft", Name: "leader_changes_total",
		Help: "Times this server saw a new raft leader (any server, itself included) after an election; a steady rise means an unstable cluster.",
	})

	FSMApplyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "fsm", Name: "apply_duration_seconds",
		Help:    "Time this server's FSM took to apply one committed raft entry to its state store, by message type (every server applies every entry).",
		Buckets: fsmBuckets,
	}, []string{"type"})

	CSICalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "csi", Name: "calls_total",
		Help: "CSI gRPC calls this client agent made to a plugin, by plugin ID, method (CreateVolume, NodePublishVolume, ...) and gRPC code (OK, NotFound, DeadlineExceeded, ...).",
	}, []string{"plugin", "method", "code"})
	CSICallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "csi", Name: "call_duration_seconds",
		Help:    "Time a CSI gRPC call to a plugin took, as the client agent saw it, by plugin ID, method and gRPC code.",
		Buckets: csiBuckets,
	}, []string{"plugin", "method", "code"})

	ClaimReleaseRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "csi", Name: "claim_release_retries_total",
		Help: "Claim release steps that failed on the leader and wait their backoff to be tried again, by the claim's state: unpublishing (the node detach) or node-detached (the controller detach).",
	}, []string{"state"})

	NodeHeartbeatMisses = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "node", Name: "heartbeat_misses_total",
		Help: "Nodes the leader marked down because their heartbeat TTL ran out (counted by the leader of the time only).",
	})

	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP API requests this agent answered, by route pattern (/v1/volume/csi/{id}, never the raw path), method and status code.",
	}, []string{"route", "method", "status"})
	HTTPRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    `Time this agent took to answer an HTTP API request, by route pattern, method, status code and blocking: "true" for a long poll (a blocking query, ?index=, or the event stream), whose time is mostly its wait; select blocking="false" for latency.`,
		Buckets: requestBuckets,
	}, []string{"route", "method", "status", "blocking"})
)

// berthCollectors are the process-global metrics above, registered into every
// registry New makes.
func berthCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		RPCRequests, RPCRequestDuration,
		RaftApplyDuration, RaftLeaderChanges,
		FSMApplyDuration,
		CSICalls, CSICallDuration,
		ClaimReleaseRetries,
		NodeHeartbeatMisses,
		HTTPRequests, HTTPRequestDuration,
	}
}
