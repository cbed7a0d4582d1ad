package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/structs"
)

// TestServeHTTP_Metrics: every request counts once, and is timed once, by
// the pattern of the route that served it (never the path asked), its
// method and status, and is timed apart when it is a long poll (?index=
// above 0, the event stream). A path no route serves is "/"; the router's own
// redirect (which carries the path it redirects to) and a method no route
// serves are "other". (Counted as differences: other tests use the same
// routes, never at the same time as this one, which is not parallel.)
func TestServeHTTP_Metrics(t *testing.T) {
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	h := New(&fakeBackend{err: structs.NewError(structs.CodeNotFound, "volume not found")}, nil)

	type series struct{ route, method, status, blocking string }
	no, yes := telemetry.NotBlocking, telemetry.Blocking
	want := map[series]int{
		{"/v1/volume/csi/{id}", "GET", "404", no}:   3,
		{"/v1/volume/csi/{id}", "GET", "404", yes}:  1,
		{"/v1/metrics", "GET", "200", no}:           1,
		{"/", "GET", "404", no}:                     1,
		{"/", "GET", "307", no}:                     1,
		{telemetry.Other, "GET", "308", no}:         1,
		{"/v1/metrics", telemetry.Other, "405", no}: 1,
		{"/v1/event/stream", "GET", "200", yes}:     1,
	}
	before := map[series]float64{}
	samples := map[series]uint64{}
	for s := range want {
		before[s] = telemetrytest.Counter(t, telemetry.HTTPRequests, s.route, s.method, s.status)
		samples[s] = telemetrytest.Samples(t, telemetry.HTTPRequestDuration, s.route, s.method, s.status, s.blocking)
	}
	for _, req := range []struct{ method, target string }{
		{"GET", "/v1/volume/csi/instrument-vol-1"},
		{"GET", "/v1/volume/csi/instrument-vol-2"},
		{"GET", "/v1/volume/csi/instrument-vol-3?index=0"},
		{"GET", "/v1/volume/csi/instrument-vol-4?index=12&wait=1s"},
		{"GET", "/v1/metrics"},
		{"GET", "/v1/instrument/no/such/route"},
		{"GET", "/v1//instrument-unclean"},
		{"BREW", "/v1/metrics"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(req.method, req.target, nil))
	}
	redirect := httptest.NewRequest("GET", "/v1/instrument-redirect", nil)
	redirect.Pattern = "/v1/instrument-redirect/"
	h.(*handler).observeRequest(redirect, http.StatusPermanentRedirect, 0)
	stream := httptest.NewRequest("GET", "/v1/event/stream?topic=Node", nil) // as long as its reader
	stream.Pattern = "/v1/event/stream"
	h.(*handler).observeRequest(stream, http.StatusOK, 0)

	counted := map[series]int{} // the counter has no blocking label
	for s, n := range want {
		counted[series{s.route, s.method, s.status, ""}] += n
	}
	for s, n := range want {
		must.Eq(t, before[s]+float64(counted[series{s.route, s.method, s.status, ""}]),
			telemetrytest.Counter(t, telemetry.HTTPRequests, s.route, s.method, s.status), must.Sprintf("requests %v", s))
		must.Eq(t, samples[s]+uint64(n), telemetrytest.Samples(t, telemetry.HTTPRequestDuration, s.route, s.method, s.status, s.blocking),
			must.Sprintf("durations %v", s))
	}
	scrape := telemetrytest.Scrape(t, tel.Handler())
	must.StrContains(t, scrape, `berth_http_requests_total{method="GET",route="/v1/volume/csi/{id}",status="404"}`)
	must.StrNotContains(t, scrape, "instrument-")
	must.StrNotContains(t, scrape, "BREW")
}

// TestServeHTTP_Metrics_StatusWritten: the status a handler writes is the
// one counted (here a 400 for a bad query), not the default 200.
func TestServeHTTP_Metrics_StatusWritten(t *testing.T) {
	h := New(&fakeBackend{}, nil)
	before := telemetrytest.Counter(t, telemetry.HTTPRequests, "/v1/metrics", "GET", "400")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/metrics?format=statsd", nil))
	must.EqOp(t, http.StatusBadRequest, rec.Code)
	must.Eq(t, before+1, telemetrytest.Counter(t, telemetry.HTTPRequests, "/v1/metrics", "GET", "400"))
}
