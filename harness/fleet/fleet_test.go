package fleet_test

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/harness/fleet"
	"github.com/berth-csi/berth/harness/loadtest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server"
)

// The defaults are small, for `make test` (about a minute); `make fleet`
// passes the full ones (FLEET_ARGS in the GNUmakefile).
var (
	nodes      = flag.Int("nodes", 50, "fleet: simulated client nodes")
	registrars = flag.Int("registrars", 16, "fleet: concurrent callers of Node.Register in the registration phase (and of the first allocation reads)")
	conns      = flag.Int("conns", 6, "fleet: RPC sessions the simulated nodes share, spread over the three servers")
	steady     = flag.Duration("steady", 5*time.Second, "fleet: length of the steady window (heartbeats and flaps only, measured)")
	flapShare  = flag.Float64("flap-share", 0.05, "fleet: share of the nodes that flap fleet-node's health")
	flapEvery  = flag.Duration("flap-every", 3*time.Second, "fleet: about how often a flapping node flips fleet-node's health")
	cutShare   = flag.Float64("cut-share", 0.10, "fleet: share of the nodes that stop heartbeating at the end")
	claims     = flag.Int("claims", 20, "fleet: volume claims held on the nodes to be cut")
	maxHB      = flag.Float64("max-heartbeats-per-second", server.DefaultMaxHeartbeatsPerSecond,
		"fleet: the servers' server { max_heartbeats_per_second } (0: no cap; the TTL stays at its floor)")
	pluginReps = flag.Int("plugin-reps", 5, "fleet: reads of each plugin status route (the median is shown)")
	profile    = flag.Bool("profile", false, "fleet: save the leader's heap after the registrations and its CPU profile of the steady window in the log dir")
	seed       = flag.Uint64("seed", 0, "fleet: picks the flapping and the cut nodes (0: from the clock, printed)")
)

// skipUnlessUsable skips, saying why, where the simulator does not run.
func skipUnlessUsable(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the fleet simulator builds berth, starts three servers and plays a fleet of client nodes for about a minute")
	}
	testlog.NeedRoot(t, "the fleet simulator runs with the process harnesses, which run as root (make test, make fleet), "+
		"so that it never competes with an unprivileged go test ./... for the machine")
}

// run is one TestFleet: the cluster, the fleet, the table and what went
// wrong, reported after the table.
type run struct {
	t        *testing.T
	c        *fleet.Cluster
	f        *fleet.Fleet
	tab      *loadtest.Table
	events   *fleet.Events
	cut      map[string]bool // IDs of the nodes to cut
	problems []string
}

// check records a problem unless ok; the test fails with it after the
// table is printed.
func (r *run) check(ok bool, format string, args ...any) {
	if !ok {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// TestFleet starts three servers and plays a fleet of client nodes over
// the real RPC path, through registration, a steady window, plugin
// status reads, a system job on every node, and the cut of a tenth of
// the nodes, and prints one table (`make fleet`; `make test` runs it
// with 50 nodes). It asserts no speed figure, only that every step
// worked: every node registered, no node was marked down while it
// heartbeated, the plugin counts matched the fleet, the system job
// reached every node, and the cut nodes were all marked down and their
// claims freed.
func TestFleet(t *testing.T) {
	skipUnlessUsable(t)
	flap, cut := share(*flapShare, *nodes), share(*cutShare, *nodes)
	must.True(t, *nodes > 0 && *registrars > 0 && *conns > 0 && *steady > 0 && *flapEvery > 0 && *pluginReps > 0,
		must.Sprintf("-nodes, -registrars, -conns, -steady, -flap-every and -plugin-reps must be positive"))
	must.True(t, flap+cut <= *nodes && cut > 0 && *claims >= 0,
		must.Sprintf("-flap-share %g and -cut-share %g of %d nodes: %d flapping and %d cut; give at least one node to cut, "+
			"and no more of both than nodes (-claims %d must not be negative)", *flapShare, *cutShare, *nodes, flap, cut, *claims))
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	r := &run{t: t, tab: &loadtest.Table{}}
	r.c = fleet.StartCluster(t, *maxHB)
	t.Logf("fleet: servers up in %s (seed %d); logs in %s", time.Since(start).Round(time.Millisecond), *seed, r.c.LogDir)
	f, err := fleet.New(r.c.RPCAddrs(), fleet.Options{Nodes: *nodes, Conns: *conns, Flap: flap, FlapEvery: *flapEvery, Cut: cut, Seed: *seed})
	must.NoError(t, err)
	r.f = f
	t.Cleanup(f.Stop)
	r.cut = map[string]bool{}
	for _, n := range f.Select(func(n *fleet.Node) bool { return n.Cut }) {
		r.cut[n.ID] = true
	}
	defer func() {
		t.Logf("fleet: %d nodes, %d flapping, %d cut; %s in all; last node error: %q\n%s",
			*nodes, flap, cut, time.Since(start).Round(time.Millisecond), f.LastError(), r.tab)
		for _, p := range r.problems {
			t.Error(p)
		}
	}()

	misses := r.register()
	r.steadyWindow()
	r.pluginStatus()
	r.ping()
	claimed := r.claims()
	r.systemJob()
	r.cutNodes(claimed)
	r.falseDowns(misses)
}

// share is the count of a share of n, rounded up.
func share(s float64, n int) int { return int(math.Ceil(s * float64(n))) }

// nodeCounts lists the nodes at a and counts them by status, and the
// nodes to cut that are down.
func (r *run) nodeCounts(a *fleet.Agent) (byStatus map[string]int, cutDown int) {
	list, _, err := r.c.API(a).Nodes().List(nil)
	must.NoError(r.t, err)
	byStatus = map[string]int{}
	for _, n := range list {
		byStatus[n.Status]++
		if r.cut[n.ID] && n.Status == "down" {
			cutDown++
		}
	}
	return byStatus, cutDown
}

// statusText renders node counts by status.
func statusText(m map[string]int) string {
	var parts []string
	for _, s := range []string{"ready", "initializing", "down"} {
		if m[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[s], s))
		}
	}
	return strings.Join(parts, ", ")
}
