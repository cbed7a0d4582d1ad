package server

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestTimedFSM: each command entry raft hands the FSM is applied as the
// FSM would, and timed once under its message type; other entries are
// passed through untimed. (Counted as differences: the server's tests do
// not run in parallel.)
func TestTimedFSM(t *testing.T) {
	f, err := fsm.New(testlog.Logger(t, "fsm"))
	must.NoError(t, err)
	timed := timedFSM{f}
	before := telemetrytest.Samples(t, telemetry.FSMApplyDuration, "NodeRegister")

	buf, err := structs.Encode(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.Node("n1")})
	must.NoError(t, err)
	must.Nil(t, timed.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: buf}))
	must.Nil(t, timed.Apply(&raft.Log{Index: 2, Type: raft.LogNoop}))

	node, err := f.State().NodeByID(nil, "n1")
	must.NoError(t, err)
	must.NotNil(t, node)
	must.Eq(t, before+1, telemetrytest.Samples(t, telemetry.FSMApplyDuration, "NodeRegister"))
}

// TestServer_Metrics: a server's recorders move with its work: it sees
// itself elected, times its raft applies and its FSM's, counts the node
// that misses its heartbeat (its TTL timer's call, made here); its
// collector reports, as the leader, the
// claim seed takes, then the volume the missed heartbeat made
// unschedulable and its claim released.
func TestServer_Metrics(t *testing.T) {
	changes := telemetrytest.Value(t, telemetry.RaftLeaderChanges)
	misses := telemetrytest.Value(t, telemetry.NodeHeartbeatMisses)
	applies := telemetrytest.Samples(t, telemetry.RaftApplyDuration, "CSIVolumeClaim")
	fsmApplies := telemetrytest.Samples(t, telemetry.FSMApplyDuration, "NodeUpdateStatus")

	s := testServer(t)
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	must.NoError(t, tel.Registry.Register(s.MetricsCollector()))
	scrapeHas := func(lines ...string) {
		t.Helper()
		scrape := telemetrytest.Scrape(t, tel.Handler())
		for _, line := range lines {
			must.StrContains(t, scrape, line+"\n")
		}
		must.StrNotContains(t, scrape, "berth_raft_commit_index 0\n")
	}

	seed(t, s)
	must.Greater(t, changes, telemetrytest.Value(t, telemetry.RaftLeaderChanges), must.Sprint("this server's own election"))
	must.Greater(t, applies, telemetrytest.Samples(t, telemetry.RaftApplyDuration, "CSIVolumeClaim"))
	scrapeHas(
		`berth_csi_claims{state="taken"} 1`,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="node"} 1`,
		`berth_csi_volumes{plugin="hostpath",schedulable="true"} 1`,
	)

	s.heartbeatExpired("node-1") // as its TTL timer does
	node, err := s.State().NodeByID(nil, "node-1")
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusDown, node.Status)
	must.Eq(t, misses+1, telemetrytest.Value(t, telemetry.NodeHeartbeatMisses))
	must.Eq(t, fsmApplies+1, telemetrytest.Samples(t, telemetry.FSMApplyDuration, "NodeUpdateStatus"))
	scrapeHas(
		`berth_csi_claims{state="taken"} 0`,
		`berth_csi_plugin_instances_expected{plugin="hostpath",type="node"} 1`,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="node"} 0`,
		`berth_csi_volumes{plugin="hostpath",schedulable="false"} 1`,
	)
}
