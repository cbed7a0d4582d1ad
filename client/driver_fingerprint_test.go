package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// fakeDriver answers its fingerprints from a script, then repeats the
// script's last answer; set changes what it answers from then on.
type fakeDriver struct {
	mu      sync.Mutex
	script  []fakeHealth
	calls   int
	healthy bool
	desc    string
}

type fakeHealth struct {
	healthy bool
	desc    string
}

var _ driverFingerprinter = (*fakeDriver)(nil)

func (f *fakeDriver) Fingerprint(context.Context) driverState {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(f.script) > 0 {
		f.healthy, f.desc = f.script[0].healthy, f.script[0].desc
		f.script = f.script[1:]
	}
	return driverState{healthy: f.healthy, desc: f.desc}
}

func (f *fakeDriver) set(healthy bool, desc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = nil
	f.healthy, f.desc = healthy, desc
}

func (f *fakeDriver) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type driverChange struct {
	name  string
	info  *structs.DriverInfo
	event *structs.NodeEvent
}

// testDriverHealth polls drivers every interval (and retries an unhealthy
// one every millisecond) until the test ends; changes come out of the
// returned channel.
func testDriverHealth(t *testing.T, cfg *Config, drivers map[string]driverFingerprinter, interval time.Duration) (*driverHealth, <-chan driverChange) {
	t.Helper()
	changes := make(chan driverChange, 100)
	h := newDriverHealth(testlog.Logger(t, "client"), cfg, drivers, func(name string, info *structs.DriverInfo, event *structs.NodeEvent) {
		changes <- driverChange{name, info, event}
	})
	h.interval = interval
	h.retry = backoff.Policy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h, changes
}

// TestDriverHealth_SendsChangesOnly: only a change of health is handed on,
// with an event when a driver turns unhealthy or comes back, none for a
// driver found healthy at start.
func TestDriverHealth_SendsChangesOnly(t *testing.T) {
	docker := &fakeDriver{script: []fakeHealth{
		{true, "Docker 27.1.1"}, {true, "Docker 27.1.1"},
		{false, "cannot connect to the Docker daemon"}, {false, "cannot connect to the Docker daemon"},
		{true, "Docker 27.1.1"},
	}}
	cfg := DefaultConfig()
	cfg.DockerAllowPrivileged, cfg.DockerAllowHostNetwork = true, true
	h, changes := testDriverHealth(t, cfg, map[string]driverFingerprinter{structs.DriverDocker: docker}, time.Millisecond)
	h.waitFirst(context.Background(), time.Minute)

	want := []struct {
		healthy bool
		desc    string
		event   string
	}{
		{true, "Docker 27.1.1", ""},
		{false, "cannot connect to the Docker daemon", "Driver docker is unhealthy: cannot connect to the Docker daemon"},
		{true, "Docker 27.1.1", "Driver docker is healthy again"},
	}
	for i, w := range want {
		c := <-changes
		must.EqOp(t, structs.DriverDocker, c.name)
		must.True(t, c.info.Detected)
		must.EqOp(t, w.healthy, c.info.Healthy, must.Sprintf("change %d", i))
		must.EqOp(t, w.desc, c.info.HealthDescription)
		must.True(t, c.info.AllowPrivileged, must.Sprint("the client's allow_privileged goes with docker's health"))
		must.Eq(t, structs.DockerDefaultAllowCaps, c.info.AllowCaps, must.Sprint("so does allow_caps, Docker's default set when unset"))
		must.True(t, c.info.AllowHostNetwork, must.Sprint("and allow_host_network"))
		must.False(t, c.info.UpdateTime.IsZero())
		if w.event == "" {
			must.Nil(t, c.event)
			continue
		}
		must.NotNil(t, c.event)
		must.EqOp(t, w.event, c.event.Message)
		must.EqOp(t, "Driver", c.event.Subsystem)
	}
	// The script is done; the driver keeps answering healthy, which is no
	// change: a change sent now would be a bug.
	calls := docker.callCount()
	waitUntil(t, "more fingerprints", func() bool { return docker.callCount() > calls+5 })
	must.EqOp(t, 0, len(changes), must.Sprint("no change, nothing sent"))
}

// TestDriverHealth_UnhealthyRetriesSooner: a healthy driver waits the
// interval (an hour here); an unhealthy one is checked again on the
// backoff, so an engine that comes back is noticed.
func TestDriverHealth_UnhealthyRetriesSooner(t *testing.T) {
	docker := &fakeDriver{healthy: false, desc: "engine down"}
	exec := &fakeDriver{healthy: true, desc: "healthy"}
	h, changes := testDriverHealth(t, DefaultConfig(),
		map[string]driverFingerprinter{structs.DriverDocker: docker, structs.DriverExec: exec}, time.Hour)
	h.waitFirst(context.Background(), time.Minute)
	waitUntil(t, "docker checked again while unhealthy", func() bool { return docker.callCount() >= 3 })
	must.EqOp(t, 1, exec.callCount(), must.Sprint("a healthy driver waits the interval"))

	docker.set(true, "Docker 27.1.1")
	seen := map[string]bool{}
	for !seen["exec"] || !seen["docker healthy"] {
		c := <-changes
		switch {
		case c.name == structs.DriverExec:
			seen["exec"] = true
		case c.info.Healthy:
			seen["docker healthy"] = true
			must.EqOp(t, "Driver docker is healthy again", c.event.Message)
		default:
			must.EqOp(t, "engine down", c.info.HealthDescription)
		}
	}
}
