package telemetry_test

import (
	"io"
	"net/http/httptest"
	"testing"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
)

// TestNew_ScrapesWhatLibrariesEmit: a counter emitted through the compat
// API the libraries use (raft, serf) is in the scrape, under the service's
// prefix, next to the Go runtime's families.
func TestNew_ScrapesWhatLibrariesEmit(t *testing.T) {
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	metrics.IncrCounter([]string{"raft", "apply"}, 3)
	metrics.SetGauge([]string{"test", "gauge"}, 7)

	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/metrics?format=prometheus", nil))
	body, err := io.ReadAll(rec.Result().Body)
	must.NoError(t, err)
	must.EqOp(t, 200, rec.Code)
	must.StrContains(t, string(body), "berth_raft_apply 3\n")
	must.StrContains(t, string(body), "berth_test_gauge 7\n")
	must.StrContains(t, string(body), "# TYPE go_goroutines gauge")
}
