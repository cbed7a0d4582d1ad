package scheduler

import (
	"sync/atomic"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// world is a real state store written as the FSM would, with raft
// indexes counted here, and a fake clock.
type world struct {
	t       *testing.T
	st      *state.StateStore
	clock   *clocktest.Fake
	planner *Planner
	index   atomic.Uint64
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, st: statetest.New(t), clock: clocktest.New()}
	w.planner = NewPlanner(w.clock, nil)
	return w
}

func (w *world) next() uint64 { return w.index.Add(1) }

// node registers a ready node running the hostpath node plugin.
func (w *world) node(id string) *structs.Node {
	w.t.Helper()
	n := statetest.NodeWithPlugin(id, "hostpath", false, true, true)
	w.upsertNode(n)
	return n
}

func (w *world) upsertNode(n *structs.Node) {
	w.t.Helper()
	must.NoError(w.t, w.st.UpsertNode(w.next(), n))
}

func (w *world) volume(ids ...string) {
	w.t.Helper()
	var vols []*structs.CSIVolume
	for _, id := range ids {
		vols = append(vols, statetest.Volume(id, "hostpath"))
	}
	must.NoError(w.t, w.st.UpsertCSIVolume(w.next(), vols))
}

// apply writes a plan, as the FSM does.
func (w *world) apply(plan *structs.PlanApplyRequest) error { return w.st.ApplyPlan(w.next(), plan) }

// run is a user's run of the job, as Job.Register makes it: plan, then
// write the plan.
func (w *world) run(job *structs.Job) *Result {
	w.t.Helper()
	res, err := w.planner.Plan(w.st, job, Run)
	must.NoError(w.t, err)
	must.NoError(w.t, w.apply(res.Plan))
	return res
}

// clientStatus records what a client reports of an allocation.
func (w *world) clientStatus(allocID, status string) {
	w.t.Helper()
	must.NoError(w.t, w.st.UpdateAllocsFromClient(w.next(),
		[]*structs.Allocation{{ID: allocID, ClientStatus: status}}, w.clock.Now()))
}

func (w *world) nodeStatus(nodeID, status string) {
	w.t.Helper()
	must.NoError(w.t, w.st.UpdateNodeStatus(w.next(), nodeID, status, w.clock.Now().UnixNano(), nil))
}

// free frees the alloc's claim on the volume, as the volume watcher does
// at the end of the release.
func (w *world) free(volumeID, allocID string) {
	w.t.Helper()
	errs := w.st.CSIVolumeClaimBatch(w.next(), []structs.CSIVolumeClaimRequest{{VolumeID: volumeID, AllocationID: allocID,
		State: structs.CSIVolumeClaimStateFreed, Timestamp: w.clock.Now()}})
	must.NoError(w.t, errs[0])
}

// allocs lists the job's allocations that keep fn.
func (w *world) allocs(jobID string, fn func(*structs.Allocation) bool) []*structs.Allocation {
	w.t.Helper()
	iter, err := w.st.AllocsByJob(nil, structs.DefaultNamespace, jobID)
	must.NoError(w.t, err)
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); fn(a) {
			out = append(out, a)
		}
	}
	return out
}

func live(a *structs.Allocation) bool { return !a.TerminalStatus() }

func all(*structs.Allocation) bool { return true }

// writerJob is a service job of one group of count 1 writing volume;
// without a volume, a job that mounts nothing.
func writerJob(id, volume string) *structs.Job {
	tg := &structs.TaskGroup{Name: "db", Count: 1,
		Tasks: []*structs.Task{{Name: "db", Driver: "exec", Config: map[string]any{"command": "/bin/true"}}}}
	if volume != "" {
		tg.Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: volume,
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}
		tg.Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: "/data"}}
	}
	return &structs.Job{ID: id, Namespace: structs.DefaultNamespace, Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{tg}}
}

// systemJob is a system job that mounts nothing.
func systemJob(id string) *structs.Job {
	j := writerJob(id, "")
	j.Type = structs.JobTypeSystem
	return j
}
