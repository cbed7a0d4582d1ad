package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
)

// TestMetrics_Prometheus: ?format=prometheus serves the agent's registry
// (what go-metrics' users emit, raft's among them); the JSON stays the
// default; an unknown format, or no registry, says what to ask instead.
func TestMetrics_Prometheus(t *testing.T) {
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	metrics.IncrCounter([]string{"raft", "apply"}, 2)
	h := New(&fakeBackend{}, nil, WithPrometheus(tel.Handler()))

	get := func(h http.Handler, target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec
	}
	rec := get(h, "/v1/metrics?format=prometheus")
	must.EqOp(t, http.StatusOK, rec.Code)
	must.StrContains(t, rec.Header().Get("Content-Type"), "text/plain")
	must.StrContains(t, rec.Body.String(), "berth_raft_apply 2\n")
	must.StrContains(t, rec.Body.String(), "# TYPE go_goroutines gauge")

	rec = get(h, "/v1/metrics")
	must.EqOp(t, http.StatusOK, rec.Code)
	var js runtimeMetrics
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &js))
	must.Positive(t, js.Goroutines)

	rec = get(h, "/v1/metrics?format=statsd")
	must.EqOp(t, http.StatusBadRequest, rec.Code)
	must.StrContains(t, rec.Body.String(), `use format=prometheus`)
	rec = get(New(&fakeBackend{}, nil), "/v1/metrics?format=prometheus")
	must.EqOp(t, http.StatusNotFound, rec.Code)
}
