package httpapi

import (
	"net/http"
	"runtime"
	"time"

	"github.com/berth-csi/berth/structs"
)

// runtimeMetrics is what GET /v1/metrics answers for now: Go runtime
// numbers of this agent.
type runtimeMetrics struct {
	Timestamp    time.Time
	Uptime       time.Duration
	Goroutines   int
	HeapAlloc    uint64
	HeapInuse    uint64
	HeapObjects  uint64
	Sys          uint64
	NumGC        uint32
	PauseTotalNs uint64
	GOMAXPROCS   int
}

// GET /v1/metrics: the agent's Go runtime numbers as JSON, or, with
// ?format=prometheus, every metric of the agent in Prometheus' text
// exposition format.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request) error {
	switch format := r.URL.Query().Get("format"); format {
	case "":
	case "prometheus":
		if h.prometheus == nil {
			return structs.NewError(structs.CodeNotFound, "this agent serves no Prometheus metrics; ask GET /v1/metrics for its JSON")
		}
		h.prometheus.ServeHTTP(w, r)
		return nil
	default:
		return badRequest("format %q is not one /v1/metrics serves; use format=prometheus, or leave it out for JSON", format)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return writeJSON(w, r, runtimeMetrics{
		Timestamp:    time.Now().UTC(),
		Uptime:       time.Since(h.started),
		Goroutines:   runtime.NumGoroutine(),
		HeapAlloc:    ms.HeapAlloc,
		HeapInuse:    ms.HeapInuse,
		HeapObjects:  ms.HeapObjects,
		Sys:          ms.Sys,
		NumGC:        ms.NumGC,
		PauseTotalNs: ms.PauseTotalNs,
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
	})
}
