package volumewatcher_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/volumewatcher"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const (
	plugin = "hostpath"
	node   = "n1"
)

// checkpoint is one claim write the watcher made, and the store's answer.
type checkpoint struct {
	structs.CSIVolumeClaimRequest
	err error
}

// fakeDeps writes checkpoints to a real state store the way the FSM does,
// and detaches through fakes that fail or block on demand: the faults a
// real client or controller cannot be made to show at a chosen attempt.
type fakeDeps struct {
	store   *state.StateStore
	index   atomic.Uint64
	applied chan checkpoint
	started chan string // a blocking call began: "node/<alloc>"

	mu    sync.Mutex
	fail  map[string]int           // by "node/<alloc>" or "controller/<alloc>": the first calls to fail
	block map[string]chan struct{} // the call waits for it to close
	calls map[string]int
	// unavailable is how many checkpoints, from the next, raft refuses
	// (not applied): a write the real part fails only under a fault.
	unavailable int
	seen        []string         // "node/<alloc>@<claim state>", in call order
	lastCtx     map[string]error // the call's ctx.Err() when it returned
}

var _ volumewatcher.Deps = (*fakeDeps)(nil)

func (d *fakeDeps) State() *state.StateStore { return d.store }

func (d *fakeDeps) ApplyClaims(_ context.Context, req *structs.CSIVolumeClaimBatchRequest) ([]error, error) {
	d.mu.Lock()
	refuse := d.unavailable > 0
	if refuse {
		d.unavailable--
	}
	d.mu.Unlock()
	if refuse {
		return nil, structs.NewError(structs.CodeUnavailable, "raft: leadership lost; the write was not applied")
	}
	errs := d.store.CSIVolumeClaimBatch(d.index.Add(1), req.Claims)
	for i, c := range req.Claims {
		d.applied <- checkpoint{c, errs[i]}
	}
	return errs, nil
}

func (d *fakeDeps) NodeDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	return d.call(ctx, "node", vol, claim)
}

func (d *fakeDeps) ControllerDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	return d.call(ctx, "controller", vol, claim)
}

func (d *fakeDeps) call(ctx context.Context, step string, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	key := step + "/" + claim.AllocID
	d.mu.Lock()
	d.calls[key]++
	n := d.calls[key]
	d.seen = append(d.seen, fmt.Sprintf("%s@%s/%s", key, vol.ID, claim.State))
	fail, block := n <= d.fail[key], d.block[key]
	d.mu.Unlock()
	if block != nil {
		d.started <- key
		<-block
	}
	d.mu.Lock()
	d.lastCtx[key] = ctx.Err()
	d.mu.Unlock()
	if fail {
		return fmt.Errorf("%s detach of %s: attempt %d refused", step, claim.AllocID, n)
	}
	return nil
}

func (d *fakeDeps) Calls(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[key]
}

// harness is a watcher over a real state store, on a fake clock.
type harness struct {
	*fakeDeps
	clock  *clocktest.Fake
	w      *volumewatcher.Watcher
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t *testing.T, policy backoff.Policy) *harness {
	t.Helper()
	d := &fakeDeps{store: statetest.New(t), applied: make(chan checkpoint, 64), started: make(chan string, 8),
		fail: map[string]int{}, block: map[string]chan struct{}{}, calls: map[string]int{}, lastCtx: map[string]error{}}
	must.NoError(t, d.store.UpsertNode(d.index.Add(1), statetest.NodeWithPlugin(node, plugin, true, true, true)))
	must.NoError(t, d.store.ApplyPlan(d.index.Add(1), &structs.PlanApplyRequest{Job: statetest.PluginJob("plug", plugin)}))
	h := &harness{fakeDeps: d, clock: clocktest.New(), done: make(chan struct{})}
	cfg := volumewatcher.DefaultConfig()
	cfg.Deps, cfg.Clock, cfg.Backoff = d, h.clock, policy
	cfg.Logger = testlog.Logger(t, "volumewatcher")
	var err error
	h.w, err = volumewatcher.New(cfg)
	must.NoError(t, err)
	return h
}

// releasing registers volume volID with a claim of allocID, then starts
// its release (state unpublishing), as a client's terminal update does.
func (h *harness) releasing(t *testing.T, volID, allocID string) {
	t.Helper()
	must.NoError(t, h.store.ApplyPlan(h.index.Add(1), &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{statetest.Alloc(allocID, node)}}))
	must.NoError(t, h.store.UpsertCSIVolume(h.index.Add(1), []*structs.CSIVolume{statetest.Volume(volID, plugin)}))
	for _, req := range []structs.CSIVolumeClaimRequest{
		{VolumeID: volID, AllocationID: allocID, Mode: structs.CSIVolumeClaimWrite},
		{VolumeID: volID, AllocationID: allocID, State: structs.CSIVolumeClaimStateUnpublishing},
	} {
		must.NoError(t, h.store.CSIVolumeClaimBatch(h.index.Add(1), []structs.CSIVolumeClaimRequest{req})[0])
	}
}

// run starts the watcher; the test's end stops it.
func (h *harness) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		h.w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		h.mu.Lock()
		for _, b := range h.block {
			select {
			case <-b:
			default:
				close(b)
			}
		}
		h.mu.Unlock()
		<-h.done
	})
}

// next is the watcher's next checkpoint, which the store must have taken.
func (h *harness) next(t *testing.T) checkpoint {
	t.Helper()
	select {
	case cp := <-h.applied:
		must.NoError(t, cp.err, must.Sprintf("checkpoint %+v", cp.CSIVolumeClaimRequest))
		return cp
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher wrote no checkpoint")
		return checkpoint{}
	}
}

// nextStarted is the next blocking call that began.
func (h *harness) nextStarted(t *testing.T) string {
	t.Helper()
	select {
	case key := <-h.started:
		return key
	case <-time.After(10 * time.Second):
		t.Fatal("no blocking call began")
		return ""
	}
}

// claim is allocID's claim being released on volID, or nil once freed.
func (h *harness) claim(t *testing.T, volID, allocID string) *structs.CSIVolumeClaim {
	t.Helper()
	vol, err := h.store.CSIVolumeByID(nil, structs.DefaultNamespace, volID)
	must.NoError(t, err)
	must.NotNil(t, vol)
	return vol.PastClaims[allocID]
}
