package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
)

// observeRequest records one answered request (berth_http_requests_total,
// berth_http_request_duration_seconds) by route, method and status, and
// its duration also by whether it was a long poll (longPoll). The
// route is the ServeMux pattern that served it, never the raw path: one of
// the patterns handle registered or the catch-all "/"; anything else (the
// mux's own redirects carry the path they redirect to) is "other", as is
// a method no route serves. So the labels stay bounded whatever is asked.
func (h *handler) observeRequest(r *http.Request, status int, d time.Duration) {
	route := telemetry.Other
	if h.registered(r.Pattern) {
		route = r.Pattern
	}
	method := telemetry.Other
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		method = r.Method
	}
	code := strconv.Itoa(status)
	telemetry.HTTPRequests.WithLabelValues(route, method, code).Inc()
	telemetry.HTTPRequestDuration.WithLabelValues(route, method, code, telemetry.BlockingLabel(longPoll(r))).
		Observe(d.Seconds())
}

// longPoll reports whether r waits for a change before its answer: a
// blocking query (?index= above 0) or the event stream, which lasts as
// long as its reader.
func longPoll(r *http.Request) bool {
	if r.Pattern == "/v1/event/stream" {
		return true
	}
	n, err := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	return err == nil && n > 0
}

// registered reports whether pattern is one the handler registered: one
// of handle's (a set built as they were registered; never written after
// New) or the catch-all "/".
func (h *handler) registered(pattern string) bool {
	return pattern == "/" || h.patterns[pattern]
}
