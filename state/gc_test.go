package state_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

var (
	gcAt  = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	gcAll = structs.GCCutoffs{Alloc: math.MaxUint64, Job: math.MaxUint64, Node: math.MaxUint64}
)

// gcWorld is a store with a ready node n1 running the hostpath node
// plugin, and a volume "data" (single-node-writer).
func gcWorld(t *testing.T) *state.StateStore {
	t.Helper()
	s := statetest.New(t)
	upsertNodes(t, s, 1, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertVolumes(t, s, 2, statetest.Volume("data", plugID))
	return s
}

// gcAlloc is allocation idx of job's group web on n1, in client status
// status.
func gcAlloc(id, job string, idx int, status string) *structs.Allocation {
	a := statetest.Alloc(id, "n1")
	a.JobID = job
	a.Name = fmt.Sprintf("%s.web[%d]", job, idx)
	a.ClientStatus = status
	return a
}

// gcJob is a service job of one group web with count 1, stopped if stop.
func gcJob(id string, stop bool) *structs.Job {
	j := statetest.Job(id)
	j.Stop = stop
	return j
}

// gcPass lists and applies everything cut allows at index, as the leader
// would, and returns the counts of every batch together.
func gcPass(t *testing.T, s *state.StateStore, index uint64, cut structs.GCCutoffs) structs.GCResult {
	t.Helper()
	batches, err := s.GCCandidates(cut, 1000)
	must.NoError(t, err)
	var total structs.GCResult
	for i, req := range batches {
		res, err := s.ApplyGC(index+uint64(i), req)
		must.NoError(t, err)
		total.Add(res)
	}
	return total
}

func allocExists(t *testing.T, s *state.StateStore, id string) bool {
	t.Helper()
	a, err := s.AllocByID(nil, id)
	must.NoError(t, err)
	return a != nil
}

func jobExists(t *testing.T, s *state.StateStore, id string) bool {
	t.Helper()
	j, err := s.JobByID(nil, "", id)
	must.NoError(t, err)
	return j != nil
}

func nodeExists(t *testing.T, s *state.StateStore, id string) bool {
	t.Helper()
	n, err := s.NodeByID(nil, id)
	must.NoError(t, err)
	return n != nil
}

// TestStateStore_ApplyGC_TerminalAllocsOlderThanTheCutoff: of a stopped
// job, an allocation over on its client and last changed at or before the
// cutoff goes; a younger one, and one whose tasks may still run (a desired
// stop alone), stay, and so does the job while it has allocations.
func TestStateStore_ApplyGC_TerminalAllocsOlderThanTheCutoff(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.UpsertJob(3, gcJob("web", true)))
	running := gcAlloc("running", "web", 1, structs.AllocClientStatusRunning)
	running.DesiredStatus = structs.AllocDesiredStatusStop
	upsertAllocs(t, s, 10, gcAlloc("done", "web", 0, structs.AllocClientStatusComplete),
		gcAlloc("failed", "web", 2, structs.AllocClientStatusFailed), running)
	upsertAllocs(t, s, 20, gcAlloc("young", "web", 3, structs.AllocClientStatusComplete))

	res := gcPass(t, s, 30, structs.GCCutoffs{Alloc: 15, Job: math.MaxUint64})
	must.Eq(t, structs.GCResult{Allocs: 2}, res)
	must.False(t, allocExists(t, s, "done"))
	must.False(t, allocExists(t, s, "failed"))
	must.True(t, allocExists(t, s, "running"), must.Sprint("a desired stop alone is not over: its tasks may run"))
	must.True(t, allocExists(t, s, "young"), must.Sprint("changed after the cutoff"))
	must.True(t, jobExists(t, s, "web"), must.Sprint("a job stays while it has allocations"))
	must.EqOp(t, uint64(30), mustIndex(t, s, state.TableAllocs))

	// Once the last one is over and old enough, it goes with the job.
	must.NoError(t, s.UpdateAllocsFromClient(40, []*structs.Allocation{{ID: "running", ClientStatus: structs.AllocClientStatusComplete}}, gcAt))
	res = gcPass(t, s, 50, gcAll)
	must.Eq(t, structs.GCResult{Allocs: 2, Jobs: 1}, res)
	must.False(t, jobExists(t, s, "web"))
	must.EqOp(t, uint64(50), mustIndex(t, s, state.TableJobs))

	// Nothing left: a pass writes nothing.
	batches, err := s.GCCandidates(gcAll, 1000)
	must.NoError(t, err)
	must.SliceEmpty(t, batches)
}

// TestStateStore_ApplyGC_ClaimGuard: an allocation that holds a claim that
// is not freed stays, whatever the request says, until the claim is freed.
func TestStateStore_ApplyGC_ClaimGuard(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: gcJob("db", false),
		Allocs: []*structs.Allocation{gcAlloc("w1", "db", 0, structs.AllocClientStatusRunning)},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("data", "w1")}}))
	must.NoError(t, s.StopJob(11, "", "db", false, gcAt))
	// The tasks end: the claim starts releasing (unpublishing).
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "w1", ClientStatus: structs.AllocClientStatusComplete}}, gcAt))
	must.MapContainsKey(t, mustVolume(t, s, "data").PastClaims, "w1")

	batches, err := s.GCCandidates(gcAll, 1000)
	must.NoError(t, err)
	must.SliceEmpty(t, batches, must.Sprint("the leader lists no alloc holding a claim, nor its job"))

	// A request that names it anyway (a stale or wrong decision) deletes
	// nothing: the FSM checks the claims again.
	forged := &structs.GCRequest{Cutoffs: gcAll, Allocs: []string{"w1"}, Jobs: []structs.GCJobKey{{ID: "db"}}}
	res, err := s.ApplyGC(13, forged)
	must.NoError(t, err)
	must.Eq(t, structs.GCResult{}, *res)
	must.True(t, allocExists(t, s, "w1"))
	must.True(t, jobExists(t, s, "db"))

	for _, st := range []structs.CSIVolumeClaimState{structs.CSIVolumeClaimStateNodeDetached, structs.CSIVolumeClaimStateControllerDetached} {
		must.NoError(t, claimOne(s, 14, releaseReq("data", "w1", st)))
		res, err = s.ApplyGC(15, forged)
		must.NoError(t, err)
		must.Zero(t, res.Total(), must.Sprintf("claim %s", st))
	}

	// Freed: the alloc goes, and its job with it.
	must.NoError(t, claimOne(s, 16, releaseReq("data", "w1", structs.CSIVolumeClaimStateFreed)))
	must.Eq(t, structs.GCResult{Allocs: 1, Jobs: 1}, gcPass(t, s, 17, gcAll))
	must.False(t, allocExists(t, s, "w1"))
}

// TestStateStore_ApplyGC_ClaimGuard_AnyClaimMap: a claim read from a
// snapshot (a state the claim writes no longer reach: a terminal alloc
// with a taken claim, in another namespace) still keeps its allocation.
func TestStateStore_ApplyGC_ClaimGuard_AnyClaimMap(t *testing.T) {
	type claims = map[string]*structs.CSIVolumeClaim
	for name, put := range map[string]func(*structs.CSIVolume, claims){
		"read":  func(v *structs.CSIVolume, c claims) { v.ReadClaims = c },
		"write": func(v *structs.CSIVolume, c claims) { v.WriteClaims = c },
		"past":  func(v *structs.CSIVolume, c claims) { v.PastClaims = c },
	} {
		t.Run(name, func(t *testing.T) {
			vol := statetest.Volume("other-ns-vol", plugID)
			vol.Namespace = "prod"
			vol.ModifyIndex = 5
			claim := &structs.CSIVolumeClaim{AllocID: "a1", NodeID: "n1", Mode: structs.CSIVolumeClaimRead,
				State: structs.CSIVolumeClaimStateUnpublishing}
			put(vol, claims{"a1": claim})
			a := gcAlloc("a1", "gone", 0, structs.AllocClientStatusFailed)
			a.ModifyIndex = 5
			s := restored(t, map[string][]any{state.TableAllocs: {a}, state.TableCSIVolumes: {vol}})

			res, err := s.ApplyGC(10, &structs.GCRequest{Cutoffs: gcAll, Allocs: []string{"a1"}})
			must.NoError(t, err)
			must.Zero(t, res.Allocs)
			must.True(t, allocExists(t, s, "a1"))
		})
	}
}

// TestStateStore_ApplyGC_StaleDecision: a row written after the leader
// listed it is younger than the cutoff at the apply, and stays.
func TestStateStore_ApplyGC_StaleDecision(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.UpsertJob(3, gcJob("web", true)))
	upsertAllocs(t, s, 10, gcAlloc("done", "web", 0, structs.AllocClientStatusComplete))
	cut := structs.GCCutoffs{Alloc: 10, Job: 10}
	batches, err := s.GCCandidates(cut, 1000)
	must.NoError(t, err)
	must.SliceLen(t, 1, batches)
	must.Eq(t, []string{"done"}, batches[0].Allocs)

	// The client reports again before the batch is applied.
	must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: "done", ClientStatus: structs.AllocClientStatusComplete,
		TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateDead}}}}, gcAt))
	res, err := s.ApplyGC(12, batches[0])
	must.NoError(t, err)
	must.Zero(t, res.Total())
	must.True(t, allocExists(t, s, "done"))
	must.True(t, jobExists(t, s, "web"))
}

// TestStateStore_ApplyGC_RunningJobsKeepTheirPlaces: of a job that still
// runs, the newest allocation of a name stays (the scheduler reads it as
// the one holding the place), unless it was asked to stop and all older
// ones of its name go too; older ones over on their client go.
func TestStateStore_ApplyGC_RunningJobsKeepTheirPlaces(t *testing.T) {
	s := gcWorld(t)
	job := gcJob("web", false)
	job.TaskGroups[0].Count = 3
	must.NoError(t, s.UpsertJob(3, job))
	stopped := gcAlloc("stopped-newest", "web", 2, structs.AllocClientStatusComplete)
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	upsertAllocs(t, s, 10,
		gcAlloc("failed-old", "web", 0, structs.AllocClientStatusFailed),
		gcAlloc("failed-old-2", "web", 2, structs.AllocClientStatusFailed))
	upsertAllocs(t, s, 11,
		gcAlloc("running-new", "web", 0, structs.AllocClientStatusRunning),
		gcAlloc("failed-newest", "web", 1, structs.AllocClientStatusFailed),
		stopped)

	res := gcPass(t, s, 20, gcAll)
	must.Eq(t, structs.GCResult{Allocs: 3}, res)
	must.False(t, allocExists(t, s, "failed-old"), must.Sprint("replaced since"))
	must.False(t, allocExists(t, s, "failed-old-2"))
	must.False(t, allocExists(t, s, "stopped-newest"), must.Sprint("asked to stop, and nothing older of its name stays"))
	must.True(t, allocExists(t, s, "failed-newest"), must.Sprint("holds its place: it is not replaced unasked"))
	must.True(t, allocExists(t, s, "running-new"))
	must.True(t, jobExists(t, s, "web"))
}

// TestStateStore_ApplyGC_NewestStaysWhileAnOlderOneDoes: the newest
// allocation of a name, asked to stop, stays while an older one of its
// name cannot go yet: the older one would become the newest.
func TestStateStore_ApplyGC_NewestStaysWhileAnOlderOneDoes(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.UpsertJob(3, gcJob("web", false)))
	upsertAllocs(t, s, 10, gcAlloc("old", "web", 0, structs.AllocClientStatusFailed))
	newest := gcAlloc("newest", "web", 0, structs.AllocClientStatusComplete)
	newest.DesiredStatus = structs.AllocDesiredStatusStop
	upsertAllocs(t, s, 11, newest)
	// The older one changed after the cutoff.
	must.NoError(t, s.UpdateAllocsFromClient(30, []*structs.Allocation{{ID: "old", ClientStatus: structs.AllocClientStatusFailed}}, gcAt))

	must.Zero(t, gcPass(t, s, 40, structs.GCCutoffs{Alloc: 20, Job: 20}).Total())
	must.True(t, allocExists(t, s, "newest"))
	must.Eq(t, structs.GCResult{Allocs: 2}, gcPass(t, s, 41, gcAll))
}

// TestStateStore_ApplyGC_BatchJobDone: a batch job whose every allocation
// completed goes with them once the job cutoff passes them all, never its
// allocations alone (the scheduler would run it again).
func TestStateStore_ApplyGC_BatchJobDone(t *testing.T) {
	s := gcWorld(t)
	job := gcJob("nightly", false)
	job.Type = structs.JobTypeBatch
	job.TaskGroups[0].Count = 2
	must.NoError(t, s.UpsertJob(3, job))
	upsertAllocs(t, s, 10,
		gcAlloc("n0", "nightly", 0, structs.AllocClientStatusComplete),
		gcAlloc("n1", "nightly", 1, structs.AllocClientStatusRunning))

	must.Zero(t, gcPass(t, s, 20, gcAll).Total(), must.Sprint("one still runs"))

	must.NoError(t, s.UpdateAllocsFromClient(21, []*structs.Allocation{{ID: "n1", ClientStatus: structs.AllocClientStatusComplete}}, gcAt))
	must.Zero(t, gcPass(t, s, 30, structs.GCCutoffs{Alloc: math.MaxUint64, Job: 15}).Total(),
		must.Sprint("allocations past their cutoff stay while the job is younger than its own"))
	must.True(t, allocExists(t, s, "n0"))

	must.Eq(t, structs.GCResult{Allocs: 2, Jobs: 1}, gcPass(t, s, 31, structs.GCCutoffs{Alloc: 25, Job: 25}))
	must.False(t, jobExists(t, s, "nightly"))

	// A failed batch job is not done: it stays for the operator.
	failed := gcJob("failing", false)
	failed.Type = structs.JobTypeBatch
	must.NoError(t, s.UpsertJob(40, failed))
	upsertAllocs(t, s, 41, gcAlloc("f0", "failing", 0, structs.AllocClientStatusFailed))
	must.Zero(t, gcPass(t, s, 50, gcAll).Total())
	must.True(t, jobExists(t, s, "failing"))
}

// TestStateStore_ApplyGC_StoppedJobWithoutAllocs: a stopped job with no
// allocation goes once older than the job cutoff; one not stopped never.
func TestStateStore_ApplyGC_StoppedJobWithoutAllocs(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.UpsertJob(10, gcJob("stopped", true)))
	must.NoError(t, s.UpsertJob(10, gcJob("pending", false)))
	must.NoError(t, s.UpsertJob(10, statetest.PluginJob("plugin-job", "other")))
	must.NoError(t, s.StopJob(20, "", "plugin-job", false, gcAt))

	must.Eq(t, structs.GCResult{Jobs: 1}, gcPass(t, s, 30, structs.GCCutoffs{Job: 15}))
	must.False(t, jobExists(t, s, "stopped"))
	must.True(t, jobExists(t, s, "plugin-job"), must.Sprint("stopped after the cutoff"))
	must.Eq(t, structs.GCResult{Jobs: 1}, gcPass(t, s, 31, structs.GCCutoffs{Job: 25}))
	must.False(t, jobExists(t, s, "plugin-job"))
	must.True(t, jobExists(t, s, "pending"), must.Sprint("not stopped: it waits to be placed"))
}

// TestStateStore_ApplyGC_DownNodes: a node down since before the cutoff
// goes, with its plugin instances, unless a claim that is not freed names
// it; a ready node and a younger down node stay.
func TestStateStore_ApplyGC_DownNodes(t *testing.T) {
	s := gcWorld(t)
	upsertNodes(t, s, 3, statetest.NodeWithPlugin("n2", plugID, false, true, true), statetest.Node("n3"), statetest.Node("n4"))
	w1 := gcAlloc("w1", "db", 0, structs.AllocClientStatusRunning)
	w1.NodeID = "n2"
	must.NoError(t, s.ApplyPlan(4, &structs.PlanApplyRequest{Job: gcJob("db", false), Allocs: []*structs.Allocation{w1},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("data", "w1")}}))
	must.NoError(t, s.UpdateNodeStatus(10, "n2", structs.NodeStatusDown, gcAt.UnixNano(), nil))
	must.NoError(t, s.UpdateNodeStatus(11, "n3", structs.NodeStatusDown, gcAt.UnixNano(), nil))
	must.NoError(t, s.UpdateNodeStatus(30, "n4", structs.NodeStatusDown, gcAt.UnixNano(), nil))

	// n2's alloc is lost and its claim releasing: n2 stays until freed.
	must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, mustVolume(t, s, "data").PastClaims["w1"].State)
	res := gcPass(t, s, 40, structs.GCCutoffs{Node: 20})
	must.Eq(t, structs.GCResult{Nodes: 1}, res)
	must.False(t, nodeExists(t, s, "n3"))
	must.True(t, nodeExists(t, s, "n2"), must.Sprint("a claim not freed names it"))
	must.True(t, nodeExists(t, s, "n4"), must.Sprint("down after the cutoff"))
	must.True(t, nodeExists(t, s, "n1"), must.Sprint("ready"))

	must.NoError(t, claimOne(s, 41, releaseReq("data", "w1", structs.CSIVolumeClaimStateFreed)))
	res = gcPass(t, s, 42, structs.GCCutoffs{Node: 20})
	must.Eq(t, structs.GCResult{Nodes: 1}, res)
	must.False(t, nodeExists(t, s, "n2"))
	plug := mustPlugin(t, s, plugID)
	must.MapNotContainsKey(t, plug.Nodes, "n2", must.Sprint("its plugin instance goes with it"))
	must.MapContainsKey(t, plug.Nodes, "n1")

	// A request naming a node that is ready deletes nothing.
	got, err := s.ApplyGC(50, &structs.GCRequest{Cutoffs: gcAll, Nodes: []string{"n1", "missing"}})
	must.NoError(t, err)
	must.Zero(t, got.Total())
}

// TestStateStore_ApplyGC_FreedPastClaims: a freed claim left in a
// volume's past claims (from a snapshot) is removed; one still releasing
// stays.
func TestStateStore_ApplyGC_FreedPastClaims(t *testing.T) {
	vol := statetest.Volume("data", plugID)
	vol.AccessMode = structs.CSIVolumeAccessModeSingleNodeWriter
	vol.AttachmentMode = structs.CSIVolumeAttachmentModeFilesystem
	vol.PastClaims = map[string]*structs.CSIVolumeClaim{
		"freed":     {AllocID: "freed", NodeID: "n1", Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateFreed},
		"releasing": {AllocID: "releasing", NodeID: "n1", Mode: structs.CSIVolumeClaimRead, State: structs.CSIVolumeClaimStateNodeDetached},
	}
	s := restored(t, map[string][]any{state.TableCSIVolumes: {vol}})

	must.Eq(t, structs.GCResult{PastClaims: 1}, gcPass(t, s, 10, structs.GCCutoffs{}))
	got := mustVolume(t, s, "data")
	must.MapNotContainsKey(t, got.PastClaims, "freed")
	must.MapContainsKey(t, got.PastClaims, "releasing")
	must.EqOp(t, uint64(10), got.ModifyIndex)
	must.EqOp(t, structs.CSIVolumeAccessModeSingleNodeWriter, got.AccessMode, must.Sprint("still in use"))

	must.NoError(t, claimOne(s, 11, releaseReq("data", "releasing", structs.CSIVolumeClaimStateFreed)))
	must.Zero(t, gcPass(t, s, 12, gcAll).Total())
}

// TestStateStore_StopJob_PurgeRemovesAllocsOnceOver: a purge deletes the
// job and those of its allocations over on their client with no claim
// left; the others go at the next collection once they are, at any age.
func TestStateStore_StopJob_PurgeRemovesAllocsOnceOver(t *testing.T) {
	s := gcWorld(t)
	must.NoError(t, s.ApplyPlan(10, &structs.PlanApplyRequest{Job: gcJob("web", false),
		Allocs: []*structs.Allocation{
			gcAlloc("writer", "web", 0, structs.AllocClientStatusRunning),
			gcAlloc("done", "web", 1, structs.AllocClientStatusComplete),
			gcAlloc("running", "web", 2, structs.AllocClientStatusRunning),
		},
		Claims: []structs.CSIVolumeClaimRequest{planClaim("data", "writer")}}))
	must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: "writer", ClientStatus: structs.AllocClientStatusFailed}}, gcAt))

	must.NoError(t, s.StopJob(12, "", "web", true, gcAt))
	must.False(t, jobExists(t, s, "web"))
	must.False(t, allocExists(t, s, "done"), must.Sprint("over, with no claim: removed with the purge"))
	must.True(t, allocExists(t, s, "writer"), must.Sprint("its claim is still releasing"))
	run, err := s.AllocByID(nil, "running")
	must.NoError(t, err)
	must.EqOp(t, structs.AllocDesiredStatusStop, run.DesiredStatus)

	// Nothing is old enough, but a purged job's allocations go once over.
	none := structs.GCCutoffs{}
	must.Zero(t, gcPass(t, s, 20, none).Total())
	must.NoError(t, s.UpdateAllocsFromClient(21, []*structs.Allocation{{ID: "running", ClientStatus: structs.AllocClientStatusComplete}}, gcAt))
	must.Eq(t, structs.GCResult{Allocs: 1}, gcPass(t, s, 22, none))
	must.True(t, allocExists(t, s, "writer"))
	must.NoError(t, claimOne(s, 23, releaseReq("data", "writer", structs.CSIVolumeClaimStateFreed)))
	must.Eq(t, structs.GCResult{Allocs: 1}, gcPass(t, s, 24, none))
	must.False(t, allocExists(t, s, "writer"))
}

// TestStateStore_GCCandidates_Batches: batches hold about maxRows rows,
// and a job's rows are never split between two.
func TestStateStore_GCCandidates_Batches(t *testing.T) {
	s := gcWorld(t)
	for i := range 3 {
		must.NoError(t, s.UpsertJob(10, gcJob(fmt.Sprintf("empty-%d", i), true)))
	}
	must.NoError(t, s.UpsertJob(10, gcJob("big", true)))
	for i := range 4 {
		upsertAllocs(t, s, 11, gcAlloc(fmt.Sprintf("big-%d", i), "big", i, structs.AllocClientStatusComplete))
	}

	batches, err := s.GCCandidates(gcAll, 2)
	must.NoError(t, err)
	// "big" (4 allocs and the job) alone, then the three empty jobs, two
	// and one.
	must.SliceLen(t, 3, batches)
	must.SliceLen(t, 4, batches[0].Allocs)
	must.Eq(t, []structs.GCJobKey{{Namespace: structs.DefaultNamespace, ID: "big"}}, batches[0].Jobs)
	must.EqOp(t, 2, batches[1].Rows())
	must.EqOp(t, 1, batches[2].Rows())
	var total structs.GCResult
	for i, b := range batches {
		must.Eq(t, gcAll, b.Cutoffs)
		res, err := s.ApplyGC(uint64(20+i), b)
		must.NoError(t, err)
		total.Add(res)
	}
	must.Eq(t, structs.GCResult{Allocs: 4, Jobs: 4}, total)
}

func TestStateStore_ApplyGC_NilRequest(t *testing.T) {
	s := gcWorld(t)
	_, err := s.ApplyGC(10, nil)
	mustCode(t, structs.ErrBadRequest, err)
}
