package telemetry

import (
	"fmt"
	"net/http"
	"time"

	armon "github.com/armon/go-metrics"
	armonprom "github.com/armon/go-metrics/prometheus"
	hashimetrics "github.com/hashicorp/go-metrics"
	hashiprom "github.com/hashicorp/go-metrics/prometheus"
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

// New makes the registry, registers berth's own metrics (metrics.go) in
// it and points both go-metrics globals at it, under service (the
// metrics' prefix: "berth"): hashicorp/go-metrics', which raft, serf and
// memberlist use, and armon/go-metrics', which raft-boltdb uses (through
// go-metrics' compat package).
func New(service string) (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, berthCollectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("telemetry: register a collector: %w", err)
		}
	}
	if err := armonGlobal(service, reg); err != nil {
		return nil, err
	}
	if err := hashicorpGlobal(service, reg); err != nil {
		return nil, err
	}
	return &Telemetry{Registry: reg}, nil
}

// armonGlobal points armon/go-metrics' global at reg. Each sink's Name is
// only the placeholder it describes itself by; two sinks in one registry
// need two.
func armonGlobal(service string, reg prometheus.Registerer) error {
	sink, err := armonprom.NewPrometheusSinkFrom(armonprom.PrometheusOpts{
		Name: service + "_armon_go_metrics", Expiration: Expiration, Registerer: reg})
	if err != nil {
		return fmt.Errorf("telemetry: the armon/go-metrics sink: %w", err)
	}
	cfg := armon.DefaultConfig(service)
	cfg.EnableHostname = false       // one agent per scrape target
	cfg.EnableRuntimeMetrics = false // the Go collector has them
	if _, err := armon.NewGlobal(cfg, sink); err != nil {
		return fmt.Errorf("telemetry: the armon/go-metrics global: %w", err)
	}
	return nil
}

// hashicorpGlobal points hashicorp/go-metrics' global at reg.
func hashicorpGlobal(service string, reg prometheus.Registerer) error {
	sink, err := hashiprom.NewPrometheusSinkFrom(hashiprom.PrometheusOpts{
		Name: service + "_hashicorp_go_metrics", Expiration: Expiration, Registerer: reg})
	if err != nil {
		return fmt.Errorf("telemetry: the hashicorp/go-metrics sink: %w", err)
	}
	cfg := hashimetrics.DefaultConfig(service)
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	if _, err := hashimetrics.NewGlobal(cfg, sink); err != nil {
		return fmt.Errorf("telemetry: the hashicorp/go-metrics global: %w", err)
	}
	return nil
}

// Handler serves the registry in Prometheus' text exposition format. A
// collector that fails is left out of the scrape, not the whole scrape.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
