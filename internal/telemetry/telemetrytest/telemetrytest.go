package telemetrytest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// Counter is the value of v's series with labels (0, and made, if it has
// none yet).
func Counter(t testing.TB, v *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return Value(t, v.WithLabelValues(labels...))
}

// Value is the value of a counter or a gauge, c's one series
// (client_golang's testutil.ToFloat64). It fails the test where that
// panics: c collects no series or several, or one of another type.
func Value(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("telemetrytest: value of %T: %v", c, r)
		}
	}()
	return testutil.ToFloat64(c)
}

// Samples is how many observations v's series with labels holds.
func Samples(t testing.TB, v *prometheus.HistogramVec, labels ...string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
		t.Fatalf("telemetrytest: read histogram %v: %v", labels, err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Scrape is what h (a registry's handler) serves to one GET.
func Scrape(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("telemetrytest: scrape answered %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}
