package heartbeat_test

import (
	"fmt"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/structs"
)

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	_, err := heartbeat.New(heartbeat.Config{TTL: -time.Second})
	must.ErrorContains(t, err, "Clock, Logger, State, MarkDown and Leading are required")
	must.ErrorContains(t, err, "TTL must be positive")
}

// TestTimers_MissedTTLMarksNodeDown: a node whose last heartbeat is a TTL
// old is marked down at that instant, not a nanosecond before, with the
// write, event, log line and miss count of a missed heartbeat.
func TestTimers_MissedTTLMarksNodeDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1")
		misses := telemetrytest.Value(t, telemetry.NodeHeartbeatMisses)
		must.NoError(t, w.timers.Arm(true))
		synctest.Wait() // the timers wait for Arm's deadline, TTL+grace on
		start := time.Now()
		w.timers.Reset("node-1", ttl) // its heartbeat: a deadline sooner than that

		after(ttl - time.Nanosecond)
		must.SliceEmpty(t, w.marked())
		must.Eq(t, structs.NodeStatusReady, w.status("node-1"))

		after(time.Nanosecond)
		must.Eq(t, []string{"node-1"}, w.marked())
		must.Eq(t, structs.NodeStatusDown, w.status("node-1"))
		m := w.written()[0]
		must.Eq(t, start.Add(ttl), m.at)
		must.Eq(t, &structs.NodeUpdateStatusRequest{
			NodeID:    "node-1",
			Status:    structs.NodeStatusDown,
			UpdatedAt: start.Add(ttl).UnixNano(),
			Event: &structs.NodeEvent{
				Subsystem: "Heartbeat",
				Message:   "node missed its heartbeat (TTL 10s); marked down",
				Timestamp: start.Add(ttl),
			},
		}, m.req)
		must.StrContains(t, w.logs.String(), "[WARN]  solo: node missed its heartbeat; marking it down: node_id=node-1 ttl=10s\n")
		must.Eq(t, misses+1, telemetrytest.Value(t, telemetry.NodeHeartbeatMisses))
		must.MapEmpty(t, w.timers.Armed(), must.Sprint("a timer fires once"))

		after(10 * ttl)
		must.Eq(t, []string{"node-1"}, w.marked(), must.Sprint("and is not restarted"))
	})
}

// TestTimers_HeartbeatsKeepTheNodeUp: each heartbeat pushes the deadline
// a TTL on from itself; the node goes down a TTL after the last one.
func TestTimers_HeartbeatsKeepTheNodeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1")
		must.NoError(t, w.timers.Arm(true))
		for range 20 {
			w.timers.Reset("node-1", ttl)
			after(ttl / 2)
		}
		must.SliceEmpty(t, w.marked())
		last := time.Now()
		w.timers.Reset("node-1", ttl)
		after(ttl)
		must.Eq(t, []string{"node-1"}, w.marked())
		must.Eq(t, last.Add(ttl), w.written()[0].at)
	})
}

// TestTimers_ArmStartsEveryNodeNotDown: a new leader gives every node
// that is not down TTL plus grace; a down node gets no timer.
func TestTimers_ArmStartsEveryNodeNotDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "ready-1", "init-1", "down-1")
		must.NoError(t, w.timers.Arm(true))
		deadline := time.Now().Add(ttl + heartbeat.Grace)
		must.Eq(t, map[string]time.Time{"ready-1": deadline, "init-1": deadline}, w.timers.Armed())

		after(ttl + heartbeat.Grace - time.Nanosecond)
		must.SliceEmpty(t, w.marked())
		after(time.Nanosecond)
		got := w.marked()
		sort.Strings(got)
		must.Eq(t, []string{"init-1", "ready-1"}, got)
	})
}

// TestTimers_RearmAfterRestore: Arm without start, on the leader (a
// snapshot restore), replaces the timers by the state's nodes at TTL plus
// grace; off the leader it does nothing.
func TestTimers_RearmAfterRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1")
		must.NoError(t, w.timers.Arm(false))
		must.MapEmpty(t, w.timers.Armed(), must.Sprint("off the leader"))

		must.NoError(t, w.timers.Arm(true))
		w.timers.Reset("node-1", ttl)
		w.timers.Reset("gone", ttl) // not in the restored state
		after(ttl / 2)
		w.addNode("node-2")
		must.NoError(t, w.timers.Arm(false))
		deadline := time.Now().Add(ttl + heartbeat.Grace)
		must.Eq(t, map[string]time.Time{"node-1": deadline, "node-2": deadline}, w.timers.Armed())
		after(ttl + heartbeat.Grace)
		must.Eq(t, 2, len(w.marked()))
	})
}

// TestTimers_OffTheLeader: before Arm(true) and after Disable, a
// heartbeat starts no timer and nothing is marked down; Disable stops the
// timers running.
func TestTimers_OffTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1")
		w.timers.Reset("node-1", ttl)
		w.timers.Expire("node-1")
		must.MapEmpty(t, w.timers.Armed())

		must.NoError(t, w.timers.Arm(true))
		w.timers.Reset("node-1", ttl)
		after(ttl / 2)
		w.timers.Disable()
		must.MapEmpty(t, w.timers.Armed())
		w.timers.Reset("node-1", ttl)
		must.MapEmpty(t, w.timers.Armed())
		after(10 * ttl)
		must.SliceEmpty(t, w.marked())

		// The next term starts them again.
		must.NoError(t, w.timers.Arm(true))
		after(ttl + heartbeat.Grace)
		must.Eq(t, []string{"node-1"}, w.marked())
	})
}

// TestTimers_Clear: a deregistered node's timer is stopped.
func TestTimers_Clear(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1", "node-2")
		must.NoError(t, w.timers.Arm(true))
		w.timers.Reset("node-1", ttl)
		w.timers.Reset("node-2", ttl)
		w.timers.Clear("node-1")
		w.timers.Clear("never-armed")
		after(ttl)
		must.Eq(t, []string{"node-2"}, w.marked())
		must.Eq(t, structs.NodeStatusReady, w.status("node-1"))
	})
}

// TestTimers_FailedMarkDownRetriesNextTTL: a write that fails is tried
// again a TTL later while the server leads, and the miss counted once;
// once it no longer leads, it is not.
func TestTimers_FailedMarkDownRetriesNextTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1", "node-2")
		misses := telemetrytest.Value(t, telemetry.NodeHeartbeatMisses)
		must.NoError(t, w.timers.Arm(true))
		w.failNext(1)
		w.timers.Reset("node-1", ttl)
		after(ttl)
		must.EqOp(t, 1, w.refusals())
		must.StrContains(t, w.logs.String(), "[ERROR] solo: mark node down: node_id=node-1 error=\"raft: leadership lost while committing log\"\n")
		must.Eq(t, map[string]time.Time{"node-1": time.Now().Add(ttl), "node-2": time.Now().Add(heartbeat.Grace)}, w.timers.Armed())
		must.Eq(t, misses, telemetrytest.Value(t, telemetry.NodeHeartbeatMisses))
		after(ttl - heartbeat.Grace)
		must.Eq(t, []string{"node-2"}, w.marked())
		after(heartbeat.Grace)
		must.Eq(t, []string{"node-2", "node-1"}, w.marked())
		must.Eq(t, misses+2, telemetrytest.Value(t, telemetry.NodeHeartbeatMisses))

		w.addNode("node-3")
		w.failNext(1)
		w.leading.Store(false)
		w.timers.Reset("node-3", ttl)
		after(ttl)
		must.EqOp(t, 2, w.refusals())
		must.MapEmpty(t, w.timers.Armed(), must.Sprint("no retry once not leading"))
	})
}

// TestTimers_NodeDownOrGone: a timer that fires for a node already down,
// or gone, writes nothing.
func TestTimers_NodeDownOrGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "down-1")
		must.NoError(t, w.timers.Arm(true))
		w.timers.Reset("down-1", ttl)
		w.timers.Reset("gone", ttl)
		after(ttl)
		must.SliceEmpty(t, w.marked())
		must.MapEmpty(t, w.timers.Armed())
	})
}

// TestTimers_Expire marks a node down at once and stops its timer.
func TestTimers_Expire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, "node-1")
		must.NoError(t, w.timers.Arm(true))
		w.timers.Expire("node-1")
		must.Eq(t, []string{"node-1"}, w.marked())
		must.MapEmpty(t, w.timers.Armed())
	})
}

// TestTimers_ManyNodesEachAtItsDeadline: nodes heartbeating at different
// times, some again with a shorter TTL (a deadline moved earlier), each
// go down exactly at their own deadline, in deadline order.
func TestTimers_ManyNodesEachAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("node-%03d", i))
		}
		w := newWorld(t, ids...)
		must.NoError(t, w.timers.Arm(true))
		want := map[string]time.Time{}
		for i, id := range ids {
			// Heartbeats in reverse order, every 10ms, so each pushes
			// its node to the back; every third again with half the TTL.
			id = ids[n-1-i]
			w.timers.Reset(id, ttl)
			want[id] = time.Now().Add(ttl)
			if i%3 == 0 {
				w.timers.Reset(id, ttl/2)
				want[id] = time.Now().Add(ttl / 2)
			}
			after(10 * time.Millisecond)
		}
		after(ttl + heartbeat.Grace)
		downs := w.written()
		must.SliceLen(t, n, downs)
		for i, m := range downs {
			must.Eq(t, want[m.req.NodeID], m.at, must.Sprint(m.req.NodeID))
			if i > 0 {
				must.False(t, m.at.Before(downs[i-1].at), must.Sprint("in deadline order"))
			}
		}
	})
}

// ScaledTTL: the floor until the fleet, each node heartbeating 4.8 times
// a TTL, would heartbeat faster than the cap, then 4.8 seconds per
// maxPerSecond nodes; no cap, no growth.
func TestScaledTTL(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		nodes int
		want  time.Duration
	}{
		{250, 0, ttl}, {250, 520, ttl}, {250, 521, 10003 * time.Millisecond},
		{250, 10_000, 192 * time.Second}, {0, 10_000, ttl}, {3, 100, 160 * time.Second},
	} {
		must.Eq(t, tc.want, heartbeat.ScaledTTL(ttl, tc.rate, tc.nodes), must.Sprintf("%d nodes at %g/s", tc.nodes, tc.rate))
	}
}

// TestTimers_FleetTTLGrows: 40 nodes under a cap of 9.6 heartbeats a
// second (4.8 a TTL each) are given 20 s, not the 10 s floor; a new leader arms them for that
// (plus grace), so none is marked down at the floor's deadline, and all
// are at the fleet's; a heartbeat's timer runs the TTL it was given.
func TestTimers_FleetTTLGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nodes []string
		for i := range 40 {
			nodes = append(nodes, fmt.Sprintf("node-%02d", i))
		}
		w := newWorldWith(t, func(c *heartbeat.Config) { c.MaxPerSecond = 9.6 }, nodes...)
		must.NoError(t, w.timers.Arm(true))
		synctest.Wait()
		fleet := w.timers.FleetTTL()
		must.Eq(t, 20*time.Second, fleet)
		w.timers.Reset("node-00", fleet) // a heartbeat, given the fleet's TTL

		after(ttl + heartbeat.Grace)
		must.SliceEmpty(t, w.marked(), must.Sprint("the floor's deadline passes: nobody down"))
		after(fleet - ttl - heartbeat.Grace - time.Nanosecond)
		must.SliceEmpty(t, w.marked(), must.Sprint("node-00 is a nanosecond short of its TTL"))
		after(time.Nanosecond)
		must.Eq(t, []string{"node-00"}, w.marked())
		after(heartbeat.Grace)
		must.Len(t, 40, w.marked(), must.Sprint("the rest at the fleet's TTL plus grace"))
		must.Eq(t, ttl, w.timers.FleetTTL(), must.Sprint("no live node: the floor again"))
	})
}

// TestTimers_FleetTTLBeforeArm: a new leader answers heartbeats before it
// arms its timers; it tells them the TTL of the state's live nodes (one
// more counted), which Arm's timers then wait plus grace, not the floor.
func TestTimers_FleetTTLBeforeArm(t *testing.T) {
	var nodes []string
	for i := range 40 {
		nodes = append(nodes, fmt.Sprintf("node-%02d", i))
	}
	w := newWorldWith(t, func(c *heartbeat.Config) { c.MaxPerSecond = 9.6 }, nodes...)
	before := w.timers.FleetTTL()
	must.Eq(t, heartbeat.ScaledTTL(ttl, 9.6, 41), before)
	must.Greater(t, ttl, before, must.Sprint("not the floor"))
	must.NoError(t, w.timers.Arm(true))
	must.Eq(t, 20*time.Second, w.timers.FleetTTL(), must.Sprint("armed: the timers' own count"))
	must.LessEq(t, w.timers.FleetTTL()+heartbeat.Grace, before, must.Sprint("the answer before Arm is within what Arm's timers wait"))
}
