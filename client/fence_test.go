package client

import (
	"os"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestFence_DueAtHalfTheTTLOncePerLoss(t *testing.T) {
	var f fence
	t0 := time.Now()
	_, _, fire := f.due(t0.Add(time.Hour))
	must.False(t, fire, must.Sprint("a client that never reached the servers runs nothing to fence"))

	f.contact(t0, 10*time.Second)
	why, _, fire := f.due(t0.Add(4999 * time.Millisecond))
	must.False(t, fire)
	must.EqOp(t, "", why)

	why, within, fire := f.due(t0.Add(5 * time.Second))
	must.True(t, fire)
	must.EqOp(t, 3*time.Second, within)
	must.StrContains(t, why, "has not reached any server for 5s (half the heartbeat TTL, 10s)")
	why, _, fire = f.due(t0.Add(6 * time.Second))
	must.False(t, fire, must.Sprint("fires once per loss of contact"))
	must.NotEq(t, "", why, must.Sprint("but stays due, for allocs started meanwhile"))

	f.contact(t0.Add(7*time.Second), 10*time.Second)
	_, _, fire = f.due(t0.Add(8 * time.Second))
	must.False(t, fire)
	f.contact(t0.Add(time.Second), 10*time.Second) // an older answer arriving late moves nothing back
	_, _, fire = f.due(t0.Add(12 * time.Second))
	must.True(t, fire)
}

func TestHeartbeatInterval_WithinAQuarterOfTheTTL(t *testing.T) {
	for range 1000 {
		d := heartbeatInterval(10 * time.Second)
		must.Between(t, 10*time.Second/6, d, 10*time.Second/4)
	}
}

// TestFence_KeptAcrossRestarts: the last contact and TTL are written on
// each contact; a client restarted on the data dir counts from them, by
// the wall clock, and fences at once if half the TTL has passed.
func TestFence_KeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	first := fence{path: fencePath(dir)}
	sent := time.Now().Add(-6 * time.Second)
	must.NoError(t, first.contact(sent, 10*time.Second))

	second := fence{path: fencePath(dir)}
	must.NoError(t, second.restore())
	must.EqOp(t, 10*time.Second, second.knownTTL())
	why, within, fire := second.due(time.Now())
	must.True(t, fire, must.Sprint("6s since the last contact, TTL 10s"))
	must.EqOp(t, 3*time.Second, within)
	must.StrContains(t, why, "has not reached any server for 6")

	none := fence{path: fencePath(t.TempDir())}
	must.NoError(t, none.restore(), must.Sprint("no file: nothing known"))
	_, _, fire = none.due(time.Now())
	must.False(t, fire)

	must.NoError(t, os.WriteFile(fencePath(dir), []byte("{"), 0o600))
	must.ErrorContains(t, second.restore(), "malformed")
}
