package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/fleet"
	"github.com/berth-csi/berth/harness/loadtest"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/structs"
)

// ttlFloor is the servers' least heartbeat TTL (server.DefaultConfig).
const ttlFloor = 10 * time.Second

// register registers every node, then waits until each heartbeats on
// the fleet's TTL, and measures the leader's memory per node. It returns
// the heartbeat misses the servers had counted before any node.
func (r *run) register() int64 {
	t := r.t
	leader := r.c.WaitLeader(time.Minute)
	rss0, err := loadtest.RSS(leader)
	must.NoError(t, err)
	g0 := goroutines(leader)
	misses, err := r.c.HeartbeatMisses()
	must.NoError(t, err)

	stopProgress := r.progress()
	took, err := r.f.Register(*registrars)
	stopProgress()
	must.NoError(t, err)
	regEnd := time.Now()
	r.tab.Add(fmt.Sprintf("nodes registered/s (%d registrars)", *registrars), fmt.Sprintf("%.0f/s", float64(*nodes)/took.Seconds()),
		fmt.Sprintf("%d nodes in %s: Node.Register with each node's own secret, over %d shared RPC sessions; a raft write each; %d sent again",
			*nodes, loadtest.Seconds(took), *conns, r.f.RegisterRetries.Load()))
	byStatus, _ := r.nodeCounts(leader)
	must.EqOp(t, *nodes, byStatus["ready"], must.Sprintf("after the registrations the servers list %s", statusText(byStatus)))

	// A node registered early was handed the TTL of a smaller fleet:
	// each runs on the whole fleet's once a heartbeat was answered since.
	_, hi := fleet.TTLRange(r.f.Nodes)
	fleet.WaitUntil(t, 2*max(hi, heartbeat.ScaledTTL(ttlFloor, *maxHB, *nodes))+time.Minute,
		"every node heartbeating on the fleet's TTL (a heartbeat answered since the registrations ended)", func() bool {
			for _, n := range r.f.Nodes {
				if !n.LastBeat().After(regEnd) {
					return false
				}
			}
			return true
		})
	if l := r.c.WaitLeader(time.Minute); l != leader {
		r.check(false, "fleet: the leader changed from %s to %s during the registrations", leader.Name, l.Name)
		return misses
	}
	rss1, err := loadtest.RSS(leader)
	must.NoError(t, err)
	g1 := goroutines(leader)
	if *profile {
		path, err := r.c.SaveProfile(leader, "heap", "gc=1", "heap-registered.pb.gz")
		must.NoError(t, err)
		t.Logf("fleet: the leader's heap with %d nodes: %s", *nodes, path)
	}
	per := func(a, b int64) string { return loadtest.Bytes(float64(b-a) / float64(*nodes)) }
	how := fmt.Sprintf("VmRSS %s -> %s, before any node and once every node heartbeats; of it anonymous (heap) %s/node, "+
		"mapped files (bolt) %s/node; leader goroutines %s -> %s", loadtest.Bytes(float64(rss0.RSS)), loadtest.Bytes(float64(rss1.RSS)),
		per(rss0.Anon, rss1.Anon), per(rss0.File, rss1.File), g0, g1)
	if *nodes < 5000 {
		how += "; under 5,000 nodes the GC's swings outweigh the nodes"
	}
	r.tab.Add("leader RSS per node [target <= 10 KB]", per(rss0.RSS, rss1.RSS), how)
	return misses
}

// steadyWindow measures the window of heartbeats and flaps alone: the
// rate of heartbeats answered, the TTL, the servers' CPU, the latencies
// of the nodes' calls, and the nodes marked down meanwhile (there must
// be none). It starts the event stream that later phases read.
func (r *run) steadyWindow() {
	t := r.t
	leader := r.c.WaitLeader(time.Minute)
	var followers []*fleet.Agent
	for _, s := range r.c.Servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	ev, err := fleet.WatchEvents(r.c.API(followers[0]), 0)
	must.NoError(t, err)
	r.events = ev
	t.Cleanup(ev.Stop)

	ok0, failed0, rereg0 := r.f.HeartbeatsOK.Load(), r.f.HeartbeatsFailed.Load(), r.f.Reregistered.Load()
	flapsFailed0 := r.f.FlapsFailed.Load()
	r.f.Heartbeats.Start()
	r.f.Flaps.Start()
	meter, err := fleet.StartCPU(leader.PID(), followers[0].PID(), followers[1].PID(), 0)
	must.NoError(t, err)
	stopProfile := r.cpuProfile(leader, "cpu-steady.pb.gz")
	time.Sleep(*steady) // the window being measured
	shares, wall, err := meter.Shares()
	must.NoError(t, err)
	hb, fp := r.f.Heartbeats.Stop(), r.f.Flaps.Stop()
	ok := r.f.HeartbeatsOK.Load() - ok0
	stopProfile()

	lo, hi := fleet.TTLRange(r.f.Nodes)
	r.tab.Add(fmt.Sprintf("steady heartbeats/s handled [cap: max_heartbeats_per_second %g]", *maxHB), fmt.Sprintf("%.0f/s", float64(ok)/wall.Seconds()),
		fmt.Sprintf("%d Node.UpdateStatus answered in %s (%d failed, %d answered NotFound); a node heartbeats every TTL/6 to TTL/4: "+
			"about %.0f/s expected at TTL %s", ok, loadtest.Seconds(wall), r.f.HeartbeatsFailed.Load()-failed0,
			r.f.Reregistered.Load()-rereg0, 24*float64(*nodes)/(5*hi.Seconds()), loadtest.Seconds(hi)))
	r.tab.Add("heartbeat TTL handed out", loadtest.Seconds(hi),
		fmt.Sprintf("least %s among the nodes' last answers; max(%s floor, %d nodes x %.1f heartbeats a TTL / max_heartbeats_per_second %g) = %s",
			loadtest.Seconds(lo), ttlFloor, *nodes, structs.HeartbeatsPerTTL, *maxHB, loadtest.Seconds(heartbeat.ScaledTTL(ttlFloor, *maxHB, *nodes))))
	how := fmt.Sprintf("utime+stime of %s (pid %d) over %s; followers %s and %s; this simulator %s; %d cores in all",
		leader.Name, leader.PID(), loadtest.Seconds(wall), fleet.Percent(shares[1]), fleet.Percent(shares[2]), fleet.Percent(shares[3]), runtime.NumCPU())
	if *profile {
		how += "; a CPU profile of the leader was being taken"
	}
	r.tab.Add("leader CPU, share of one core, steady window [target <= 50 %]", fleet.Percent(shares[0]), how)
	r.tab.Add("heartbeat latency (Node.UpdateStatus)", fmt.Sprintf("%s / %s", loadtest.Millis(hb.Median()), loadtest.Millis(hb.Quantile(0.99))),
		"p50 / p99 over the steady window; "+fleet.Spread(hb))
	r.tab.Add("node-update latency (Node.UpdateFingerprint)", fmt.Sprintf("%s / %s", loadtest.Millis(fp.Median()), loadtest.Millis(fp.Quantile(0.99))),
		fmt.Sprintf("p50 / p99 of the flapping nodes' fleet-node health flips, every %s or so; %s; %d failed",
			*flapEvery, fleet.Spread(fp), r.f.FlapsFailed.Load()-flapsFailed0))

	downs := ev.Downs()
	byStatus, _ := r.nodeCounts(leader)
	r.tab.Add("false node-downs, steady window [target 0]", strconv.Itoa(len(downs)),
		fmt.Sprintf("nodes marked down while every node heartbeated (event stream at %s); the servers then list %s", followers[0].Name, statusText(byStatus)))
	r.check(len(downs) == 0, "fleet: %d nodes were marked down during the steady window while they heartbeated", len(downs))
	r.check(byStatus["ready"] == *nodes, "fleet: after the steady window the servers list %s, not %d ready", statusText(byStatus), *nodes)
	if l := r.c.Leader(); l != leader {
		r.check(false, "fleet: the leader changed from %s during the steady window (now %v)", leader.Name, l)
	}
}

// cliPluginPage is the page of instances `berth plugin status ID` reads.
const cliPluginPage = 100

// pluginStatus times the plugin status routes at the leader and checks
// the counts they show against the fleet.
func (r *run) pluginStatus() {
	t := r.t
	leader := r.c.WaitLeader(time.Minute)
	cl := r.c.API(leader)
	var list, get, whole loadtest.Latencies
	var stubs []*structs.CSIPluginListStub
	var mono, all *structs.CSIPlugin
	for range *pluginReps {
		start := time.Now()
		var err error
		stubs, _, err = cl.CSIPlugins().List(nil)
		must.NoError(t, err)
		list = append(list, time.Since(start))
	}
	// As `berth plugin status ID` reads it: the counts and the first
	// page of instances.
	for range *pluginReps {
		start := time.Now()
		var err error
		mono, _, err = cl.CSIPlugins().Info(fleet.MonoPlugin, &api.QueryOptions{PerPage: cliPluginPage})
		must.NoError(t, err)
		get = append(get, time.Since(start))
	}
	for range *pluginReps {
		start := time.Now()
		var err error
		all, _, err = cl.CSIPlugins().Info(fleet.MonoPlugin, nil)
		must.NoError(t, err)
		whole = append(whole, time.Since(start))
	}
	r.tab.Add(fmt.Sprintf("plugin status: GET /v1/plugins?type=csi, %d nodes [target <= 20 ms]", *nodes), loadtest.Millis(list.Median()),
		fmt.Sprintf("at the leader, decoded; median of %d (max %s)", len(list), loadtest.Millis(list.Max())))
	r.tab.Add(fmt.Sprintf("plugin status %s: GET /v1/plugin/csi/%s?per_page=%d, %d nodes [target <= 20 ms]", fleet.MonoPlugin, fleet.MonoPlugin, cliPluginPage, *nodes),
		loadtest.Millis(get.Median()),
		fmt.Sprintf("at the leader, decoded, as the CLI reads it; median of %d (max %s); the fleet's counts and the first %d nodes' %d controller and %d node instances",
			len(get), loadtest.Millis(get.Max()), cliPluginPage, len(mono.Controllers), len(mono.Nodes)))
	r.tab.Add(fmt.Sprintf("  every instance: GET /v1/plugin/csi/%s, %d nodes", fleet.MonoPlugin, *nodes), loadtest.Millis(whole.Median()),
		fmt.Sprintf("median of %d (max %s); %d controller and %d node instances, grows with the fleet",
			len(whole), loadtest.Millis(whole.Max()), len(all.Controllers), len(all.Nodes)))

	byID := map[string]*structs.CSIPluginListStub{}
	for _, s := range stubs {
		byID[s.ID] = s
	}
	m, nd := byID[fleet.MonoPlugin], byID[fleet.NodePlugin]
	must.True(t, m != nil && nd != nil, must.Sprintf("the plugin list holds %d plugins, not %s and %s", len(stubs), fleet.MonoPlugin, fleet.NodePlugin))
	n, flapping := *nodes, len(r.f.Select(func(n *fleet.Node) bool { return n.Flaps }))
	ok := m.ControllersHealthy == n && m.ControllersExpected == n && m.NodesHealthy == n && m.NodesExpected == n &&
		nd.ControllersExpected == 0 && nd.NodesExpected == n && nd.NodesHealthy >= n-flapping && nd.NodesHealthy <= n &&
		mono.NodesExpected == n && mono.ControllersExpected == n
	r.check(ok, "fleet: the plugin counts do not match %d nodes (%d flapping fleet-node): %s", n, flapping, pluginCounts(m, nd))
	verdict := "as expected"
	if !ok {
		verdict = "WRONG"
	}
	r.tab.Add(fmt.Sprintf("plugin counts shown, %d nodes", n), verdict, pluginCounts(m, nd)+fmt.Sprintf(" (%d nodes flap fleet-node)", flapping))
}

// pluginCounts renders the health counts of the two plugins' stubs.
func pluginCounts(m, nd *structs.CSIPluginListStub) string {
	return fmt.Sprintf("%s: controllers %d healthy of %d expected, nodes %d of %d; %s: controllers %d of %d, nodes %d healthy of %d",
		m.ID, m.ControllersHealthy, m.ControllersExpected, m.NodesHealthy, m.NodesExpected,
		nd.ID, nd.ControllersHealthy, nd.ControllersExpected, nd.NodesHealthy, nd.NodesExpected)
}

// ping has a server call three nodes back, each through a server other
// than the one its session goes to, over the sessions they share.
func (r *run) ping() {
	var done int
	for i := range min(3, len(r.f.Nodes)) {
		through := r.c.Servers[(i+1)%len(r.c.Servers)]
		err := fleet.Ping(context.Background(), through.RPCAddr(), r.f.Nodes[i])
		r.check(err == nil, "%v", err)
		if err == nil {
			done++
		}
	}
	r.tab.Add("server calls to a node over a shared session", fmt.Sprintf("%d of %d", done, min(3, len(r.f.Nodes))),
		fmt.Sprintf("ClientStatus.Ping through another server: it finds the session the node's calls came on, which %d nodes share, and calls the node", (*nodes+*conns-1)/(*conns)))
}

// progress logs the registrations answered every 30 s until the
// returned func is called.
func (r *run) progress() func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				r.t.Logf("fleet: %d of %d nodes registered after %s (%d sent again; last node error: %q)", r.f.Registered.Load(), *nodes,
					time.Since(start).Round(time.Second), r.f.RegisterRetries.Load(), r.f.LastError())
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// cpuProfile starts a CPU profile of a over the steady window, when
// -profile is given, and returns what waits for it to be saved.
func (r *run) cpuProfile(a *fleet.Agent, file string) func() {
	if !*profile {
		return func() {}
	}
	return r.c.CPUProfile(r.t, a, *steady, file)
}

// goroutines is how many goroutines server a runs, from the first line
// of its goroutine profile ("goroutine profile: total N"), "?" if it
// cannot be read.
func goroutines(a *fleet.Agent) string {
	resp, err := http.Get(a.HTTPAddr() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "goroutine profile: total "); ok {
			return n
		}
	}
	return "?"
}
