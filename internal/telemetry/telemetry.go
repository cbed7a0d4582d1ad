package telemetry

import (
	"fmt"
	"net/http"
	"time"

	armon "github.com/armon/go-metrics"
	armonprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Expiration is how long a go-metrics gauge or counter not updated stays
// in the scrape.
const Expiration = 5 * time.Minute

// Telemetry is an agent's registry.
type Telemetry struct {
	// Registry holds every collector; Handler serves it.
	Registry *prometheus.Registry
}

// New makes the registry and points go-metrics' global sink at it, under
// service (the metrics' prefix: "berth").
func New(service string) (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("telemetry: register the Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("telemetry: register the process collector: %w", err)
	}
	sink, err := armonprom.NewPrometheusSinkFrom(armonprom.PrometheusOpts{Expiration: Expiration, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("telemetry: the go-metrics sink: %w", err)
	}
	cfg := armon.DefaultConfig(service)
	cfg.EnableHostname = false       // one agent per scrape target
	cfg.EnableRuntimeMetrics = false // the Go collector has them
	if _, err := armon.NewGlobal(cfg, sink); err != nil {
		return nil, fmt.Errorf("telemetry: the go-metrics global: %w", err)
	}
	return &Telemetry{Registry: reg}, nil
}

// Handler serves the registry in Prometheus' text exposition format. A
// collector that fails is left out of the scrape, not the whole scrape.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
