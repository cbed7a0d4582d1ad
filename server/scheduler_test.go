package server

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func writerJob(id, volume string) *structs.Job {
	return &structs.Job{ID: id, Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "db", Count: 1,
		Volumes: map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: volume,
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
		Tasks: []*structs.Task{{Name: "db", Driver: "exec", Config: map[string]any{"command": "/bin/true"},
			VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/data"}}}},
	}}}
}

// schedWorld is one server with two ready nodes running the hostpath node
// plugin (no controller, and no client behind them) and a volume "data".
func schedWorld(t *testing.T) *Server {
	// No client heartbeats for these nodes: a long TTL keeps them ready
	// until a test marks them down.
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	for _, id := range []string{"node-1", "node-2"} {
		schedRegisterNode(t, s, statetest.NodeWithPlugin(id, "hostpath", false, true, true))
	}
	var vresp structs.CSIVolumeRegisterResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &vresp))
	return s
}

// schedRegisterNode registers a node as its client would.
func schedRegisterNode(t *testing.T, s *Server, n *structs.Node) {
	t.Helper()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{Node: n}, &nresp))
}

func TestJob_Register_ReservesTheClaimWithThePlacement(t *testing.T) {
	s := schedWorld(t)
	var first structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &first))
	must.SliceLen(t, 1, first.Placed)
	must.SliceEmpty(t, first.Failures)
	placed := first.Placed[0]

	vol, err := s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, placed.ID, must.Sprint("the claim lands with the placement"))
	must.EqOp(t, placed.NodeID, vol.WriteClaims[placed.ID].NodeID)

	// A second writer is not placed, and says which alloc and node hold it.
	var second structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("second", "data")}, &second))
	must.SliceEmpty(t, second.Placed)
	must.SliceLen(t, 1, second.Failures)
	f := second.Failures[0]
	must.EqOp(t, 1, f.Missing)
	reasons := strings.Join(f.Reasons, "\n")
	must.StrContains(t, reasons, `volume "data"`)
	must.StrContains(t, reasons, placed.ID)
	must.StrContains(t, reasons, placed.NodeID)

	// An unknown volume is a reason too.
	var third structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("third", "nope")}, &third))
	must.SliceLen(t, 1, third.Failures)
	must.StrContains(t, third.Failures[0].Reasons[0], `(nope): not registered`)
}

func TestJob_Stop_ReleasesAndWatcherRetriesWithBackoff(t *testing.T) {
	s := schedWorld(t)
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &reg))
	allocID := reg.Placed[0].ID

	var stop structs.JobDeregisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "first"}, &stop))
	vol, err := s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, allocID, must.Sprint("a stop alone releases nothing: the task may still run"))

	// The client reports the tasks dead: the claim moves in the same write.
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: allocID, ClientStatus: structs.AllocClientStatusComplete}}}, &structs.GenericResponse{}))
	vol, err = s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapNotContainsKey(t, vol.WriteClaims, allocID)
	must.MapContainsKey(t, vol.PastClaims, allocID)

	// No client runs behind node-1, so node detach fails: the watcher
	// records the error and the next attempt, and keeps the claim.
	deadline := time.Now().Add(15 * time.Second)
	for {
		vol, err = s.State().CSIVolumeByID(nil, "", "data")
		must.NoError(t, err)
		c := vol.PastClaims[allocID]
		must.NotNil(t, c)
		if c.Attempts > 0 {
			must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, c.State)
			must.StrContains(t, c.LastError, "node detach on node")
			must.True(t, c.NextAttemptAt.After(c.UpdatedAt), must.Sprint("a backoff before the next attempt"))
			break
		}
		must.True(t, time.Now().Before(deadline), must.Sprint("the watcher never tried"))
		time.Sleep(20 * time.Millisecond)
	}

	// The node goes down: nothing to detach there, no controller: freed.
	var upd structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown}, &upd))
	deadline = time.Now().Add(20 * time.Second)
	for {
		vol, err = s.State().CSIVolumeByID(nil, "", "data")
		must.NoError(t, err)
		if !vol.InUse() {
			break
		}
		must.True(t, time.Now().Before(deadline), must.Sprintf("claim never freed: %+v", vol.PastClaims[allocID]))
		time.Sleep(50 * time.Millisecond)
	}
}

func TestJob_Register_SystemJobRunsOncePerReadyNode(t *testing.T) {
	s := schedWorld(t)
	job := writerJob("plugin", "data")
	job.Type = structs.JobTypeSystem
	job.TaskGroups[0].Volumes = nil
	job.TaskGroups[0].Tasks[0].VolumeMounts = nil
	var first structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &first))
	must.SliceLen(t, 2, first.Placed)
	must.NotEq(t, first.Placed[0].NodeID, first.Placed[1].NodeID)
	must.NotEq(t, first.Placed[0].Name, first.Placed[1].Name)

	// Registering it again places nothing more: each node runs one.
	var again structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &again))
	must.SliceEmpty(t, again.Placed)
	must.SliceEmpty(t, again.Failures)
}

// waitAllocs waits until the job has n allocations matching keep.
func waitAllocs(t *testing.T, s *Server, jobID string, n int, keep func(*structs.Allocation) bool) []*structs.Allocation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		iter, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
		must.NoError(t, err)
		var got []*structs.Allocation
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if a := raw.(*structs.Allocation); keep(a) {
				got = append(got, a)
			}
		}
		if len(got) == n {
			return got
		}
		must.True(t, time.Now().Before(deadline), must.Sprintf("job %q has %d such allocations, want %d", jobID, len(got), n))
		time.Sleep(20 * time.Millisecond)
	}
}

func live(a *structs.Allocation) bool { return !a.TerminalStatus() }

// TestJobWatcher_PlacesWhatFitsNow: the leader places, unasked, a writer
// that waited for a claim once it is freed, a system job's allocation on
// a node that joins, and a replacement for an allocation lost with its
// node.
func TestJobWatcher_PlacesWhatFitsNow(t *testing.T) {
	s := schedWorld(t)
	var first, second structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &first))
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("second", "data")}, &second))
	must.SliceLen(t, 1, second.Failures)
	firstNode := first.Placed[0].NodeID

	// The first stops; its node goes down, so the claim frees without a
	// client; the second is placed on the other node.
	var stop structs.JobDeregisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "first"}, &stop))
	var upd structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: firstNode, Status: structs.NodeStatusDown}, &upd))
	placed := waitAllocs(t, s, "second", 1, live)
	must.NotEq(t, firstNode, placed[0].NodeID)
	vol, err := s.State().CSIVolumeByID(nil, "", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, placed[0].ID, must.Sprint("the claim is reserved with the placement"))

	// A node joins: the system job runs there too, and the lost
	// allocation of "second" is replaced there when its node goes down.
	sys := writerJob("plugin", "data")
	sys.Type = structs.JobTypeSystem
	sys.TaskGroups[0].Volumes = nil
	sys.TaskGroups[0].Tasks[0].VolumeMounts = nil
	var sysResp structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: sys}, &sysResp))
	must.SliceLen(t, 1, sysResp.Placed)
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-3", "hostpath", false, true, true)}, &nresp))
	onNew := waitAllocs(t, s, "plugin", 2, live)
	must.True(t, onNew[0].NodeID == "node-3" || onNew[1].NodeID == "node-3")

	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: placed[0].NodeID, Status: structs.NodeStatusDown}, &upd))
	replaced := waitAllocs(t, s, "second", 1, live)
	must.EqOp(t, "node-3", replaced[0].NodeID)
	must.NotEq(t, placed[0].ID, replaced[0].ID)
	lost, err := s.State().AllocByID(nil, placed[0].ID)
	must.NoError(t, err)
	must.EqOp(t, structs.AllocClientStatusLost, lost.ClientStatus)
	must.EqOp(t, structs.AllocDesiredStatusStop, lost.DesiredStatus, must.Sprint("a client that comes back kills it"))
}

// TestJobWatcher_FailedStaysUntilRunAgain: the leader does not replace a
// failed allocation by itself; a user's run does, and an allocation of
// that run lost with its node is then replaced.
func TestJobWatcher_FailedStaysUntilRunAgain(t *testing.T) {
	s := schedWorld(t)
	job := writerJob("app", "data") // listed before "sys": decided in the same pass
	job.TaskGroups[0].Volumes = nil
	job.TaskGroups[0].Tasks[0].VolumeMounts = nil
	sys := writerJob("sys", "data")
	sys.Type = structs.JobTypeSystem
	sys.TaskGroups[0].Volumes = nil
	sys.TaskGroups[0].Tasks[0].VolumeMounts = nil
	var sysReg, reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: sys}, &sysReg))
	must.SliceLen(t, 2, sysReg.Placed)
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	first := reg.Placed[0]

	var upd structs.GenericResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{
		ID: first.ID, ClientStatus: structs.AllocClientStatusFailed, ClientDescription: "task failed"}}}, &upd))
	// A node joins: once the system job runs there, the watcher has made
	// a pass after the failure, and it left the failed alloc alone.
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-3", "hostpath", false, true, true)}, &nresp))
	waitAllocs(t, s, "sys", 3, live)
	all := waitAllocs(t, s, "app", 1, func(*structs.Allocation) bool { return true })
	must.EqOp(t, structs.AllocClientStatusFailed, all[0].ClientStatus)

	// Run again: replaced. Its node goes down: replaced again, unasked.
	var again structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &again))
	must.SliceLen(t, 1, again.Placed)
	second := again.Placed[0]
	var down structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: second.NodeID, Status: structs.NodeStatusDown}, &down))
	third := waitAllocs(t, s, "app", 1, live)
	must.NotEq(t, second.ID, third[0].ID)
	must.NotEq(t, second.NodeID, third[0].NodeID)
}

// TestJobWatcher_FencedIsReplaced: an allocation its client fenced (cut
// off from the servers, it killed the writer) is reported lost when the
// client is back; it is stopped and the leader places a replacement, as
// for one lost with its node. (Its claim's release in that same write is
// TestStateStore_ReleaseStartsInTheSameWrite's; here no client answers
// the release, so the group claims nothing.)
func TestJobWatcher_FencedIsReplaced(t *testing.T) {
	s := schedWorld(t)
	job := writerJob("app", "data")
	job.TaskGroups[0].Volumes = nil
	job.TaskGroups[0].Tasks[0].VolumeMounts = nil
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	fenced := reg.Placed[0]
	var upd structs.GenericResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{
		ID: fenced.ID, ClientStatus: structs.AllocClientStatusLost, ClientDescription: "fenced: no server for 5s"}}}, &upd))
	next := waitAllocs(t, s, "app", 1, live)
	must.NotEq(t, fenced.ID, next[0].ID)
	got, err := s.State().AllocByID(nil, fenced.ID)
	must.NoError(t, err)
	must.EqOp(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.EqOp(t, "fenced: no server for 5s", got.ClientDescription)
}

// TestJob_Register_WriterWaitsUntilTheEarlierClaimIsFreed: a stop does not
// free a single-writer volume, nor does the client's report that the task
// is dead: the next writer is placed only once the earlier claim is freed.
func TestJob_Register_WriterWaitsUntilTheEarlierClaimIsFreed(t *testing.T) {
	s := schedWorld(t)
	var first structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &first))
	firstID := first.Placed[0].ID
	must.NoError(t, rpcCall(t, s, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "first"}, &structs.JobDeregisterResponse{}))

	var second structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("second", "data")}, &second))
	must.SliceEmpty(t, second.Placed, must.Sprint("the stopped writer's task may still run"))
	must.StrContains(t, strings.Join(second.Failures[0].Reasons, "\n"), firstID+" on node")

	// Dead on its client: released, not freed (no client behind node-1
	// answers the node detach), so still no second writer.
	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: firstID, ClientStatus: structs.AllocClientStatusComplete}}}, &structs.GenericResponse{}))
	var third structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("second", "data")}, &third))
	must.SliceEmpty(t, third.Placed)
	must.StrContains(t, strings.Join(third.Failures[0].Reasons, "\n"), "is not freed yet")

	// Node-1 goes down: nothing to detach there; the claim is freed and the
	// jobwatcher places the second writer unasked.
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown},
		&structs.NodeUpdateResponse{}))
	deadline := time.Now().Add(20 * time.Second)
	for {
		iter, err := s.State().AllocsByJob(nil, "", "second")
		must.NoError(t, err)
		if raw := iter.Next(); raw != nil {
			must.EqOp(t, "node-2", raw.(*structs.Allocation).NodeID)
			break
		}
		must.True(t, time.Now().Before(deadline), must.Sprint("the second writer was never placed"))
		time.Sleep(20 * time.Millisecond)
	}
}

// TestJob_Register_ReaderOnlyVolumeNeedsReadOnly: a group that would write
// a reader-only volume is refused naming read_only, whether it names the
// access mode or takes the volume's; it is never placed and then failed.
func TestJob_Register_ReaderOnlyVolumeNeedsReadOnly(t *testing.T) {
	s := schedWorld(t)
	ro := statetest.Volume("ro", "hostpath")
	ro.RequestedCapabilities[0].AccessMode = structs.CSIVolumeAccessModeSingleNodeReader
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{ro}},
		&structs.CSIVolumeRegisterResponse{}))

	named := writerJob("named", "ro")
	named.TaskGroups[0].Volumes["data"].AccessMode = structs.CSIVolumeAccessModeSingleNodeReader
	defaulted := writerJob("defaulted", "ro")
	defaulted.TaskGroups[0].Volumes["data"].AccessMode, defaulted.TaskGroups[0].Volumes["data"].AttachmentMode = "", ""
	for _, job := range []*structs.Job{named, defaulted} {
		t.Run(job.ID, func(t *testing.T) {
			err := rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), "read_only")
			must.StrContains(t, err.Error(), `"data"`)
			got, err := s.State().JobByID(nil, "", job.ID)
			must.NoError(t, err)
			must.Nil(t, got, must.Sprint("nothing registered"))

			job.TaskGroups[0].Volumes["data"].ReadOnly = true
			var ok structs.JobRegisterResponse
			must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &ok))
			must.SliceLen(t, 1, ok.Placed, must.Sprint("as a reader it runs"))
			vol, err := s.State().CSIVolumeByID(nil, "", "ro")
			must.NoError(t, err)
			must.MapContainsKey(t, vol.ReadClaims, ok.Placed[0].ID)
		})
	}
}

// TestCSIVolume_Publish_ConfirmsTheReservedClaim: a client confirms the
// claim its placement reserved and writes nothing; an alloc unknown or on
// another node, or a claim being released, is refused, and a node not
// ready is NotReady, for the client to retry.
func TestCSIVolume_Publish_ConfirmsTheReservedClaim(t *testing.T) {
	s := schedWorld(t)
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &reg))
	placed := reg.Placed[0]
	other := "node-1"
	if placed.NodeID == other {
		other = "node-2"
	}
	publish := func(alloc, node string) (*structs.CSIVolumeClaimResponse, error) {
		var resp structs.CSIVolumeClaimResponse
		return &resp, rpcCall(t, s, "CSIVolume.Publish", &structs.CSIVolumePublishRequest{VolumeID: "data", AllocationID: alloc, NodeID: node}, &resp)
	}
	before, err := s.State().LatestIndex()
	must.NoError(t, err)
	resp, err := publish(placed.ID, placed.NodeID)
	must.NoError(t, err)
	must.EqOp(t, structs.CSIVolumeClaimWrite, resp.Claim.Mode)
	must.EqOp(t, structs.CSIVolumeAccessModeSingleNodeWriter, resp.Claim.AccessMode)
	must.EqOp(t, "ext-"+placed.NodeID, resp.Claim.ExternalNodeID)
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.EqOp(t, before, after, must.Sprint("a publish writes nothing"))

	_, err = publish("nobody", placed.NodeID)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrContains(t, err.Error(), "alloc nobody not found")
	_, err = publish(placed.ID, other)
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("the other node's client publishes only its own allocs"))
	must.StrContains(t, err.Error(), "runs on node "+placed.NodeID)

	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: placed.NodeID, Status: structs.NodeStatusInit},
		&structs.NodeUpdateResponse{}))
	_, err = publish(placed.ID, placed.NodeID)
	must.ErrorIs(t, err, structs.ErrNotReady)
	must.StrContains(t, err.Error(), "not ready")

	must.NoError(t, rpcCall(t, s, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{
		{ID: placed.ID, ClientStatus: structs.AllocClientStatusFailed}}}, &structs.GenericResponse{}))
	_, err = publish(placed.ID, placed.NodeID)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "being released")
}

// oneNodeWorld is one server with one ready node running the hostpath
// node plugin, and no volume.
func oneNodeWorld(t *testing.T, opts ...func(*Config)) *Server {
	s := testServer(t, append([]func(*Config){func(c *Config) { c.HeartbeatTTL = 10 * time.Minute }}, opts...)...)
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
	return s
}

// TestJob_Register_CountAtTheCapCostsTheNodes: a job asking for the most
// allocations a job may have, none of which fits on the one node, is
// answered with one reason that counts nodes. That the pass asks the node
// once, not once per count, is the planner's test
// (scheduler.TestPlanner_Plan_CountAtTheCapCostsTheNodes).
func TestJob_Register_CountAtTheCapCostsTheNodes(t *testing.T) {
	s := oneNodeWorld(t)
	job := writerJob("huge", "nope")
	job.TaskGroups[0].Count = DefaultJobMaxCount
	job.TaskGroups[0].Volumes["data"].AccessMode = structs.CSIVolumeAccessModeMultiNodeMultiWriter // shared by them all
	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.SliceEmpty(t, reg.Placed)
	must.SliceLen(t, 1, reg.Failures)
	must.EqOp(t, DefaultJobMaxCount, reg.Failures[0].Missing)
	must.Eq(t, []string{`volume "data" (nope): not registered; create or register it first (1 node)`}, reg.Failures[0].Reasons)
}
