package client

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestNodeUpdater_DriverChangesAckedByRegistration: a registration carries
// the drivers as of its sequence; a change after it is still to send.
func TestNodeUpdater_DriverChangesAckedByRegistration(t *testing.T) {
	u := newNodeUpdater(&Client{})
	u.driverChanged(structs.DriverDocker, &structs.DriverInfo{Detected: true, Healthy: true}, nil)
	_, _, seq := u.fingerprint()
	must.True(t, u.driverSnapshot()[structs.DriverDocker].Healthy)
	u.driverChanged(structs.DriverDocker, &structs.DriverInfo{Detected: true, HealthDescription: "engine down"},
		&structs.NodeEvent{Message: "Driver docker is unhealthy: engine down"})
	u.markRegistered(seq)
	must.Greater(t, u.driversAcked, u.driversSeq, must.Sprint("the change made after the registration's snapshot is not acked"))
	must.SliceLen(t, 1, u.events, must.Sprint("the event waits for the next update"))

	_, _, seq = u.fingerprint()
	u.markRegistered(seq)
	must.EqOp(t, u.driversSeq, u.driversAcked)
	snap := u.driverSnapshot()
	snap[structs.DriverDocker].Healthy = true
	must.False(t, u.driverSnapshot()[structs.DriverDocker].Healthy, must.Sprint("a snapshot is a copy"))
}

// TestClient_DriverHealthReachesTheServers: the node registers with its
// drivers' health, and a change of it re-registers the node, with no
// restart and no heartbeat needed.
func TestClient_DriverHealthReachesTheServers(t *testing.T) {
	f := startFakeServers(t)
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Servers = []string{f.addr}
	cfg.UpdateCoalesce = 10 * time.Millisecond
	cfg.Logger = testlog.Logger(t, "client")
	c, err := New(cfg)
	must.NoError(t, err)
	docker := &fakeDriver{healthy: true, desc: "Docker 27.1.1"}
	c.drivers.drivers[structs.DriverDocker] = docker
	c.drivers.interval = 5 * time.Millisecond
	c.drivers.retry = backoff.Policy{Initial: 5 * time.Millisecond, Max: 5 * time.Millisecond, Multiplier: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	driver := func(name string) *structs.DriverInfo {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.node == nil {
			return nil
		}
		return f.node.Drivers[name]
	}
	waitUntil(t, "the node registered with docker healthy", func() bool {
		d := driver(structs.DriverDocker)
		return d != nil && d.Healthy && d.Detected
	})
	must.EqOp(t, "Docker 27.1.1", driver(structs.DriverDocker).HealthDescription)
	must.True(t, driver(structs.DriverExec).Healthy, must.Sprint("exec is reported too"))

	docker.set(false, "cannot connect to the Docker daemon at unix:///var/run/docker.sock")
	waitUntil(t, "the servers saw docker unhealthy", func() bool {
		d := driver(structs.DriverDocker)
		return d != nil && !d.Healthy
	})
	must.EqOp(t, "cannot connect to the Docker daemon at unix:///var/run/docker.sock", driver(structs.DriverDocker).HealthDescription)
	must.True(t, driver(structs.DriverDocker).Detected, must.Sprint("docker is on; its engine is down"))

	docker.set(true, "Docker 27.1.1")
	waitUntil(t, "the servers saw docker healthy again", func() bool {
		d := driver(structs.DriverDocker)
		return d != nil && d.Healthy
	})
}

func TestConfig_Validate_DockerEndpoint(t *testing.T) {
	cases := []struct {
		endpoint string
		ok       bool
	}{
		{DefaultDockerEndpoint, true},
		{"unix:///run/user/1000/docker.sock", true},
		{"tcp://127.0.0.1:2375", true},
		{"tcp://docker.internal:2376", true},
		{"/var/run/docker.sock", false},
		{"unix://var/run/docker.sock", false},
		{"tcp://127.0.0.1", false},
		{"http://127.0.0.1:2375", false},
		{"", false},
	}
	for _, tc := range cases {
		t.Run(tc.endpoint, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir, cfg.Servers = "/d", []string{"127.0.0.1:4747"}
			cfg.DockerEndpoint = tc.endpoint
			err := cfg.Validate()
			if tc.ok {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, `client: driver "docker": endpoint "`+tc.endpoint+`" must be unix:///path/to/docker.sock or tcp://host:port`)
			cfg.DockerEnabled = false
			must.NoError(t, cfg.Validate(), must.Sprint("a driver turned off is not checked"))
		})
	}
}
