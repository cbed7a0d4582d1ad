package fleet_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/fleet"
	"github.com/berth-csi/berth/harness/loadtest"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/structs"
)

// claims registers the claims' volumes and the job that claims them on
// the nodes to cut, and returns the node of each claiming allocation.
func (r *run) claims() map[string]string {
	if *claims == 0 {
		return nil
	}
	leader := r.c.WaitLeader(time.Minute)
	onNode, err := fleet.RegisterClaims(r.c.API(leader), *claims, r.cut)
	must.NoError(r.t, err)
	on := map[string]bool{}
	for _, n := range onNode {
		on[n] = true
	}
	r.t.Logf("fleet: %d claims taken on %d of the %d nodes to cut", len(onNode), len(on), len(r.cut))
	return onNode
}

// systemJob registers a system job and waits until every node's own
// watch of its allocations (a blocking Node.GetClientAllocs, as a client
// agent's) has shown it its allocation.
func (r *run) systemJob() {
	t := r.t
	leader := r.c.WaitLeader(time.Minute)
	w := r.f.WatchAllocs(r.f.Nodes, fleet.SystemJobID, *registrars)
	fleet.WaitUntil(t, 5*time.Minute, "every node's first read of its allocations answered (its next read blocks)",
		func() bool { return w.Armed() == len(r.f.Nodes) })
	start := time.Now()
	resp, _, err := r.c.API(leader).Jobs().Register(fleet.SystemJob())
	must.NoError(t, err)
	answered := time.Since(start)
	placedOn := map[string]bool{}
	for _, a := range resp.Placed {
		placedOn[a.NodeID] = true
	}
	r.check(len(resp.Failures) == 0 && len(placedOn) == *nodes && len(resp.Placed) == *nodes,
		"fleet: job %s placed %d allocations on %d nodes, not one on each of %d; failures: %v", fleet.SystemJobID, len(resp.Placed), len(placedOn), *nodes, resp.Failures)
	fleet.WaitUntil(t, 5*time.Minute, "every node seeing its allocation of job "+fleet.SystemJobID,
		func() bool { return len(w.Seen()) == len(r.f.Nodes) })
	var at []time.Time
	for _, s := range w.Seen() {
		at = append(at, s)
	}
	lat := fleet.Since(start, at)
	r.tab.Add(fmt.Sprintf("system job on every node, %d nodes [target <= 10 s at 10,000]", *nodes), fleet.Duration(lat.Max()),
		fmt.Sprintf("PUT /v1/jobs answered in %s with %d placed (register and placement: one raft write); every node's blocking "+
			"Node.GetClientAllocs showed its allocation by then, median %s; %d reads failed and were tried again",
			fleet.Duration(answered), len(resp.Placed), fleet.Duration(lat.Median()), w.Failed()))
}

// cutNodes stops the heartbeats of the nodes to cut and waits until the
// servers marked each down and freed the claims on them (onNode: the
// node of each claiming allocation).
func (r *run) cutNodes(onNode map[string]string) {
	t := r.t
	nodes := r.f.Select(func(n *fleet.Node) bool { return n.Cut })
	lo, ttl := fleet.TTLRange(nodes)
	cutAt := r.f.Cut(nodes)
	fleet.WaitUntil(t, ttl+2*heartbeat.Grace+time.Minute, fmt.Sprintf("the %d cut nodes marked down (TTL %s)", len(nodes), ttl), func() bool {
		downs := r.events.Downs()
		for _, n := range nodes {
			if _, ok := downs[n.ID]; !ok {
				return false
			}
		}
		return true
	})
	downs := r.events.Downs()
	var at []time.Time
	var late time.Duration
	for i, n := range nodes {
		at = append(at, downs[n.ID])
		if d := downs[n.ID].Sub(n.LastBeat().Add(n.TTL())); i == 0 || d > late {
			late = d
		}
	}
	down := fleet.Since(cutAt, at)
	r.tab.Add(fmt.Sprintf("cut nodes (%s) all marked down [target <= TTL + 1 s]", strconv.Itoa(len(nodes))), loadtest.Seconds(down.Max()),
		fmt.Sprintf("after the cut (first %s, median %s); TTL %s as last handed out (least %s); at most %s past a node's own "+
			"deadline (its last answered heartbeat + its TTL)", loadtest.Seconds(down.Quantile(0)), loadtest.Seconds(down.Median()),
			loadtest.Seconds(ttl), loadtest.Seconds(lo), fleet.Duration(late)))
	if len(onNode) == 0 {
		return
	}
	fleet.WaitUntil(t, 2*time.Minute, fmt.Sprintf("the %d claims on the cut nodes freed", len(onNode)), func() bool {
		freed := r.events.Freed()
		for alloc := range onNode {
			if _, ok := freed[alloc]; !ok {
				return false
			}
		}
		return true
	})
	freed := r.events.Freed()
	at = at[:0]
	var release loadtest.Latencies
	on := map[string]bool{}
	for alloc, node := range onNode {
		f := freed[alloc]
		at = append(at, f.At)
		release = append(release, f.At.Sub(f.Released))
		on[node] = true
		r.check(f.NodeID == node, "fleet: the claim of alloc %s freed on node %s, not on %s where it was placed", alloc, f.NodeID, node)
	}
	lat := fleet.Since(cutAt, at)
	r.tab.Add("their claims freed", loadtest.Seconds(lat.Max()),
		fmt.Sprintf("after the cut, the last of %d claims on %d cut nodes (median %s); from the release's start (the node marked down) "+
			"to freed at most %s: a down node's detach is skipped, fleet-node has no controller", len(onNode), len(on),
			loadtest.Seconds(lat.Median()), fleet.Duration(release.Max())))
	r.checkVolumesFree(onNode)
}

// checkVolumesFree checks that no volume holds a claim, taken or being
// released, of the allocations of onNode.
func (r *run) checkVolumesFree(onNode map[string]string) {
	cl := r.c.API(r.c.WaitLeader(time.Minute))
	vols, _, err := cl.CSIVolumes().List(&api.QueryOptions{PluginID: fleet.NodePlugin})
	must.NoError(r.t, err)
	for _, stub := range vols {
		v, _, err := cl.CSIVolumes().Info(stub.ID, nil)
		must.NoError(r.t, err)
		for alloc := range onNode {
			r.check(v.WriteClaims[alloc] == nil && v.ReadClaims[alloc] == nil && v.PastClaims[alloc] == nil,
				"fleet: volume %s still holds a claim of alloc %s after its node went down and the claim was freed", v.ID, alloc)
		}
	}
}

// falseDowns checks the whole run for nodes marked down while they
// heartbeated: none in the event stream after the registrations, and as
// many heartbeat misses counted by the servers since before the first
// node as nodes cut.
func (r *run) falseDowns(missesBefore int64) {
	var wrong []string
	for id := range r.events.Downs() {
		if !r.cut[id] {
			wrong = append(wrong, id)
		}
	}
	resumed, lost, streamErr := r.events.Resumed()
	misses, err := r.c.HeartbeatMisses()
	must.NoError(r.t, err)
	byStatus, cutDown := r.nodeCounts(r.c.WaitLeader(time.Minute))
	r.tab.Add("false node-downs, whole run [target 0]", strconv.Itoa(len(wrong)),
		fmt.Sprintf("event stream since the steady window (resumed %d times, events lost %t); berth_node_heartbeat_misses_total rose by %d since before "+
			"the first node, for %d nodes cut; the servers list %s", resumed, lost, misses-missesBefore, len(r.cut), statusText(byStatus)))
	r.check(len(wrong) == 0, "fleet: %d nodes were marked down while they heartbeated: %v", len(wrong), wrong)
	r.check(misses-missesBefore == int64(len(r.cut)), "fleet: the servers counted %d heartbeat misses over the run, for %d nodes cut "+
		"(berth_node_heartbeat_misses_total): a node was marked down while it heartbeated, maybe during the registrations", misses-missesBefore, len(r.cut))
	r.check(byStatus[structs.NodeStatusReady] == *nodes-len(r.cut) && cutDown == len(r.cut),
		"fleet: at the end the servers list %s, with %d of the %d cut nodes down", statusText(byStatus), cutDown, len(r.cut))
	r.check(r.f.Reregistered.Load() == 0, "fleet: %d heartbeats were answered NotFound (the servers forgot a registered node)", r.f.Reregistered.Load())
	if resumed > 0 {
		r.t.Logf("fleet: the event stream was resumed %d times, events lost: %t (last error: %v); "+
			"the heartbeat misses count covers a node marked down that the records lack", resumed, lost, streamErr)
	}
}
