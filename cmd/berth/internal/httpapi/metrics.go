package httpapi

import (
	"net/http"
	"runtime"
	"time"
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

// GET /v1/metrics.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request) error {
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
