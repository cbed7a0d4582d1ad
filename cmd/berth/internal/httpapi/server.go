package httpapi

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Backend is the agent's server reached in-process. RPC returns a coded
// *structs.Error on failure.
type Backend interface {
	RPC(ctx context.Context, method string, args any, reply any) error
}

// maxBodyBytes bounds a request body.
const maxBodyBytes = 8 << 20

// handler serves every route.
type handler struct {
	backend Backend // wrapped in authBackend: every RPC carries the caller's token
	logger  hclog.Logger
	mux     *http.ServeMux
	started time.Time
	table   []routeEntry // every route handle registered, in order
	// patterns are table's patterns, for observeRequest's route label.
	patterns map[string]bool
	// prometheus serves GET /v1/metrics?format=prometheus; nil answers
	// that no registry is wired (see WithPrometheus).
	prometheus http.Handler
	// eventHeartbeat is how long an idle event stream waits before a
	// heartbeat line; 0 is the default (events.go).
	eventHeartbeat time.Duration
}

// Option sets up the handler beyond its backend.
type Option func(*handler)

// WithPrometheus serves the agent's metrics registry (its Prometheus
// handler) at GET /v1/metrics?format=prometheus.
func WithPrometheus(h http.Handler) Option { return func(hd *handler) { hd.prometheus = h } }

// routeEntry is one registered path and the methods it accepts.
type routeEntry struct {
	pattern string
	methods []string
}

// New returns the HTTP API handler over backend. logger is used as given
// (the agent names it "http"); nil discards the logs.
func New(backend Backend, logger hclog.Logger, opts ...Option) http.Handler {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	h := &handler{
		backend:  authBackend{next: backend},
		logger:   logger,
		mux:      http.NewServeMux(),
		started:  time.Now(),
		patterns: map[string]bool{},
	}
	for _, o := range opts {
		o(h)
	}
	h.routes()
	return h
}

// route is one path and the handler of each method it accepts.
type route map[string]func(w http.ResponseWriter, r *http.Request) error

func (h *handler) routes() {
	h.handle("/v1/status/leader", route{http.MethodGet: h.statusLeader})
	h.handle("/v1/status/peers", route{http.MethodGet: h.statusPeers})
	h.handle("/v1/agent/members", route{http.MethodGet: h.agentMembers})
	h.handle("/v1/operator/raft/configuration", route{http.MethodGet: h.raftConfiguration})
	h.handle("/v1/metrics", route{http.MethodGet: h.metrics})

	h.handle("/v1/nodes", route{http.MethodGet: h.nodeList})
	h.handle("/v1/node/{id}", route{http.MethodGet: h.nodeGet})
	h.nodeDrainRoutes()

	h.handle("/v1/plugins", route{http.MethodGet: h.pluginList})
	h.handle("/v1/plugin/csi/{id}", route{
		http.MethodGet:    h.pluginGet,
		http.MethodDelete: h.pluginDelete,
	})

	h.handle("/v1/volumes", route{http.MethodGet: h.volumeList})
	h.handle("/v1/volumes/snapshot", route{
		http.MethodGet:    h.snapshotList,
		http.MethodPost:   h.snapshotCreate,
		http.MethodDelete: h.snapshotDelete,
	})
	h.handle("/v1/volumes/external", route{http.MethodGet: h.externalVolumeList})
	h.handle("/v1/volume/csi/{id}", route{
		http.MethodGet:    h.volumeGet,
		http.MethodPut:    h.volumeRegister,
		http.MethodDelete: h.volumeDeregister,
	})
	h.handle("/v1/volume/csi/{id}/create", route{http.MethodPut: h.volumeCreate})
	h.handle("/v1/volume/csi/{id}/delete", route{http.MethodDelete: h.volumeDelete})
	h.handle("/v1/volume/csi/{id}/claim", route{
		http.MethodPut:  h.volumeClaim,
		http.MethodPost: h.volumeClaim,
	})
	h.handle("/v1/volume/csi/{id}/detach", route{http.MethodDelete: h.volumeDetach})

	h.handle("/v1/jobs", route{
		http.MethodGet:  h.jobList,
		http.MethodPut:  h.jobRegister,
		http.MethodPost: h.jobRegister,
	})
	h.handle("/v1/job/{id}", route{
		http.MethodGet:    h.jobGet,
		http.MethodDelete: h.jobDeregister,
	})
	h.handle("/v1/job/{id}/allocations", route{http.MethodGet: h.jobAllocations})
	h.handle("/v1/job/{id}/plan", route{http.MethodPut: h.jobPlan, http.MethodPost: h.jobPlan})
	h.handle("/v1/job/{id}/versions", route{http.MethodGet: h.jobVersions})
	h.handle("/v1/job/{id}/revert", route{http.MethodPut: h.jobRevert, http.MethodPost: h.jobRevert})
	h.handle("/v1/allocations", route{http.MethodGet: h.allocList})
	h.handle("/v1/allocation/{id}", route{http.MethodGet: h.allocGet})
	h.handle("/v1/client/fs/logs/{alloc}", route{http.MethodGet: h.allocLogs})
	h.handle("/v1/event/stream", route{http.MethodGet: h.eventStream})

	h.aclRoutes()
	h.keyringRoutes()
	h.systemRoutes()
	h.operatorSnapshotRoutes()

	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errNotFoundRoute(r))
	})
}

// handle registers a path; a method the route lacks is a JSON 405.
func (h *handler) handle(pattern string, rt route) {
	allow := allowHeader(rt)
	h.table = append(h.table, routeEntry{pattern: pattern, methods: slices.Sorted(maps.Keys(rt))})
	h.patterns[pattern] = true
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		fn, ok := rt[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeError(w, errMethod(r, allow))
			return
		}
		if err := fn(w, r); err != nil {
			status := writeError(w, err)
			if status >= 500 {
				h.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
			}
		}
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	req := withToken(r)
	h.mux.ServeHTTP(sw, req) // sets req.Pattern
	h.observeRequest(req, sw.status, time.Since(start))
	h.logger.Trace("request", "method", r.Method, "path", r.URL.Path,
		"status", sw.status, "duration", time.Since(start))
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
