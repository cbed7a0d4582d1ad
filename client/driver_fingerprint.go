package client

import (
	"context"
	"fmt"
	"github.com/berth-csi/berth/client/drivers/docker"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// driverFingerprinter is a task driver's health check, as the client polls
// it. It must return when ctx ends.
type driverFingerprinter interface {
	Fingerprint(ctx context.Context) driverState
}

// driverState is what a fingerprint found: healthy when the driver can
// start tasks now, a description that says why not (or what answered:
// "Docker 27.1.1, API 1.46"), and whether the driver's containers' root
// is remapped (docker's user namespaces).
type driverState struct {
	healthy        bool
	desc           string
	userNamespaces bool
}

// fingerprintFunc makes a func a driverFingerprinter: the docker driver's
// Fingerprint, which answers a docker.Health, plugs in through one.
type fingerprintFunc func(ctx context.Context) driverState

var _ driverFingerprinter = fingerprintFunc(nil)

// Fingerprint calls f.
func (f fingerprintFunc) Fingerprint(ctx context.Context) driverState { return f(ctx) }

// execHealthy is the exec driver's fingerprint: it needs nothing but the
// client, so it is always healthy.
var execHealthy = fingerprintFunc(func(context.Context) driverState { return driverState{healthy: true, desc: "healthy"} })

// Driver fingerprint timings: a healthy driver is checked every
// driverInterval; an unhealthy one sooner, on driverRetry's backoff up to
// driverInterval, so that an engine that comes back is noticed within
// seconds. Each check is bounded by driverTimeout.
const (
	driverInterval = 30 * time.Second
	driverTimeout  = 10 * time.Second
	// firstFingerprintWait is how long a starting client waits for its
	// drivers' first answers before it registers without them.
	firstFingerprintWait = 2 * time.Second
)

var driverRetry = backoff.Policy{Initial: time.Second, Max: driverInterval, Multiplier: 2, Jitter: 0.2}

// driverFingerprinters are the drivers this client fingerprints, by name:
// exec always, docker when the client runs it (d, nil when driver
// "docker" is off: the node then reports no docker driver, and the
// scheduler places no docker task on it).
func driverFingerprinters(d *docker.Driver) map[string]driverFingerprinter {
	fps := map[string]driverFingerprinter{structs.DriverExec: execHealthy}
	if d != nil {
		fps[structs.DriverDocker] = fingerprintFunc(func(ctx context.Context) driverState {
			h := d.Fingerprint(ctx)
			if !h.Healthy {
				return driverState{desc: h.Err}
			}
			return driverState{healthy: true, desc: fmt.Sprintf("Docker %s, API %s", h.Version, h.APIVersion), userNamespaces: h.UserNamespaces}
		})
	}
	return fps
}

// driverHealth polls each driver's fingerprint and hands every change of
// its health to onChange (the node updater, which sends it to the
// servers), with an event for people when a driver's health changes.
// run's goroutines are the only ones that call the fingerprinters.
type driverHealth struct {
	logger   hclog.Logger
	drivers  map[string]driverFingerprinter
	onChange func(name string, info *structs.DriverInfo, event *structs.NodeEvent)
	// policies are what the client allows each driver's tasks
	// (DriverInfo's AllowPrivileged, AllowCaps, AllowHostNetwork).
	policies map[string]structs.DriverInfo
	interval time.Duration
	timeout  time.Duration
	retry    backoff.Policy
	now      func() time.Time

	// firstDone is closed once every driver has reported once;
	// firstLeft counts the drivers still to report.
	firstDone chan struct{}
	firstLeft atomic.Int64
}

func newDriverHealth(logger hclog.Logger, cfg *Config, drivers map[string]driverFingerprinter,
	onChange func(string, *structs.DriverInfo, *structs.NodeEvent)) *driverHealth {
	return &driverHealth{
		logger:   logger.Named("drivers"),
		drivers:  drivers,
		onChange: onChange,
		policies: map[string]structs.DriverInfo{structs.DriverDocker: {AllowPrivileged: cfg.DockerAllowPrivileged,
			AllowCaps: cfg.dockerAllowCaps(), AllowHostNetwork: cfg.DockerAllowHostNetwork}},
		interval:  driverInterval,
		timeout:   driverTimeout,
		retry:     driverRetry,
		now:       timeNow,
		firstDone: make(chan struct{}),
	}
}

// run fingerprints every driver at once, then each on its own schedule,
// until ctx ends. It is called once, by Client.Run.
func (h *driverHealth) run(ctx context.Context) {
	names := make([]string, 0, len(h.drivers))
	for name := range h.drivers {
		names = append(names, name)
	}
	sort.Strings(names)
	var wg sync.WaitGroup
	h.firstLeft.Store(int64(len(names)))
	if len(names) == 0 {
		close(h.firstDone)
	}
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.watch(ctx, name, h.drivers[name])
		}()
	}
	wg.Wait()
}

// waitFirst waits, at most max, for every driver's first fingerprint, so
// that the node's first registration carries them; a driver slower than
// that is sent when it answers.
func (h *driverHealth) waitFirst(ctx context.Context, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-h.firstDone:
	case <-t.C:
		h.logger.Warn("a driver has not answered its first fingerprint; registering without it", "waited", max)
	case <-ctx.Done():
	}
}

// watch fingerprints one driver until ctx ends.
func (h *driverHealth) watch(ctx context.Context, name string, fp driverFingerprinter) {
	var last *structs.DriverInfo
	reported := false
	markFirst := func() {
		if !reported {
			reported = true
			if h.firstLeft.Add(-1) == 0 {
				close(h.firstDone)
			}
		}
	}
	defer markFirst()
	failures := 0
	for {
		cctx, cancel := context.WithTimeout(ctx, h.timeout)
		st := fp.Fingerprint(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		healthy, desc := st.healthy, st.desc
		policy := h.policies[name]
		info := policy.Copy()
		info.Detected, info.Healthy, info.HealthDescription = true, healthy, desc
		info.UpdateTime, info.UserNamespaces = h.now(), st.userNamespaces
		if !info.SameHealth(last) {
			event := driverEvent(name, last, info)
			if healthy {
				h.logger.Info("driver healthy", "driver", name, "description", desc)
			} else {
				h.logger.Warn("driver unhealthy", "driver", name, "description", desc)
			}
			h.onChange(name, info, event)
			last = info
		}
		markFirst()
		wait := h.interval
		if healthy {
			failures = 0
		} else {
			failures++
			wait = min(h.retry.Delay(failures), h.interval)
		}
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}

// driverEvent is the node event for a driver's change of health: none for
// a driver found healthy at start, or still healthy with another
// description (a new engine version).
func driverEvent(name string, before, now *structs.DriverInfo) *structs.NodeEvent {
	var msg string
	switch {
	case now.Healthy && (before == nil || before.Healthy):
		return nil
	case now.Healthy:
		msg = fmt.Sprintf("Driver %s is healthy again", name)
	case now.HealthDescription != "":
		msg = fmt.Sprintf("Driver %s is unhealthy: %s", name, now.HealthDescription)
	default:
		msg = fmt.Sprintf("Driver %s is unhealthy", name)
	}
	return &structs.NodeEvent{Message: msg, Subsystem: "Driver", Details: map[string]string{"driver": name}, Timestamp: now.UpdateTime}
}
