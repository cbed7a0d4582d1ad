package client

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

const (
	// allocQueryWait is how long a Node.GetClientAllocs blocks for.
	allocQueryWait = 30 * time.Second
	// allocShutdownTimeout bounds stopping every alloc when the client
	// stops with StopAllocsOnShutdown.
	allocShutdownTimeout = 30 * time.Second
)

// allocWatcher runs this node's allocations: it watches the servers' list
// (a blocking Node.GetClientAllocs), starts a runner for each new alloc,
// passes desired status changes to the runners, and sends their status
// changes back (Node.UpdateAlloc), coalesced, retried until the servers
// have them.
//
// Lock order: runners' methods are never called with mu or updMu held,
// and a runner calls onUpdate with its own lock held, which takes updMu
// only.
type allocWatcher struct {
	c    *Client
	kick chan struct{}
	// reconcileKick wakes the volume reconciler after a sync.
	reconcileKick chan struct{}
	// strays is set once the stray containers are being looked for (after
	// the first sync).
	strays atomic.Bool

	mu      sync.Mutex
	runners map[string]*allocrunner.Runner
	// cleanups are the cleanup runners not yet done (see sync).
	cleanups []*allocrunner.Runner
	// draining are the workload runners being stopped (by any sync) and
	// not yet done: a plugin is stopped only once they are.
	draining []*allocrunner.Runner

	updMu   sync.Mutex
	pending map[string]*structs.Allocation // client views not yet sent, by alloc ID
}

func newAllocWatcher(c *Client) *allocWatcher {
	return &allocWatcher{
		c:    c,
		kick: make(chan struct{}, 1),

		reconcileKick: make(chan struct{}, 1),
		runners:       map[string]*allocrunner.Runner{},
		pending:       map[string]*structs.Allocation{},
	}
}

// run watches and sends until ctx ends; then it lets go of the runners
// (their tasks keep running for the next client), or stops them first
// with StopAllocsOnShutdown.
func (w *allocWatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		w.c.sendLoop(ctx, w.kick, w.c.config.AllocUpdateCoalesce, w.c.config.AllocUpdateBurst, "allocation update failed; retrying", w.send)
	}()
	go func() {
		defer wg.Done()
		w.fenceLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		w.reconcileVolumes(ctx)
	}()
	w.watch(ctx)
	wg.Wait()

	runners := w.allRunners()
	if w.c.config.StopAllocsOnShutdown {
		// Workloads first, so that their volumes are unmounted while the
		// plugins that serve them still run; then the plugins; then the
		// plugin dirs' own mounts.
		ctx, cancel := context.WithTimeout(context.Background(), allocShutdownTimeout)
		defer cancel()
		workloads, plugins := byPlugin(runners)
		stopAll(ctx, workloads)
		w.reconcileOnce(ctx) // what a runner could not unmount
		stopAll(ctx, plugins)
		if _, err := exec.DetachMountsUnder(volumemanager.PluginsDir(w.c.config.DataDir), nil); err != nil {
			w.c.logger.Warn("cannot unmount the plugin dirs", "error", err)
		}
	}
	for _, r := range runners {
		r.Shutdown()
	}
}

// stopAll stops the runners and waits for them, until ctx ends.
func stopAll(ctx context.Context, runners []*allocrunner.Runner) {
	for _, r := range runners {
		r.Stop()
	}
	for _, r := range runners {
		select {
		case <-r.Done():
		case <-ctx.Done():
			return
		}
	}
}

// byPlugin splits runners into those of workloads and those of plugins.
func byPlugin(runners []*allocrunner.Runner) (workloads, plugins []*allocrunner.Runner) {
	for _, r := range runners {
		if r.RunsPlugin() {
			plugins = append(plugins, r)
		} else {
			workloads = append(workloads, r)
		}
	}
	return workloads, plugins
}

// runner is the alloc's runner, or nil.
func (w *allocWatcher) runner(allocID string) *allocrunner.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runners[allocID]
}

func (w *allocWatcher) allRunners() []*allocrunner.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*allocrunner.Runner, 0, len(w.runners))
	for _, r := range w.runners {
		out = append(out, r)
	}
	return out
}

// watch follows the servers' list of this node's allocs.
func (w *allocWatcher) watch(ctx context.Context) {
	var index uint64
	failures := 0
	for {
		req := &structs.NodeSpecificRequest{NodeID: w.c.nodeID,
			QueryOptions: structs.QueryOptions{MinQueryIndex: index, MaxQueryTime: allocQueryWait}}
		var resp structs.NodeClientAllocsResponse
		err := w.c.blockingRPC(ctx, "Node.GetClientAllocs", req, &resp, allocQueryWait)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := ServerRetry.Delay(failures)
			if errors.Is(err, structs.ErrNotFound) && !isDone(w.c.registered) {
				// Not registered yet: read again as soon as it is.
				select {
				case <-ctx.Done():
					return
				case <-w.c.registered:
				case <-time.After(wait):
				}
				continue
			}
			if !errors.Is(err, structs.ErrNotFound) {
				w.c.logger.Warn("cannot read this node's allocations; retrying", "error", err, "in", wait)
			}
			if !backoff.Sleep(ctx, wait) {
				return
			}
			continue
		}
		failures = 0
		if resp.Index < index {
			index = 0 // the servers' state went back (a snapshot restore): read it all again
			continue
		}
		if resp.Index == index && index != 0 {
			continue // the wait ended with nothing new
		}
		index = resp.Index
		before := w.sync(resp.Allocs)
		if !w.c.settled.Load() && !w.c.settling.Swap(true) {
			go w.settleAfter(ctx, before) // the first sync names every past alloc
		}
		if !w.strays.Swap(true) {
			go func() { // after the first sync, every alloc still listed has its runner
				waitAll(before, cleanupWait)
				w.removeStrayContainers(ctx)
				w.removeStrayCgroups()
			}()
		}
	}
}

// cleanupWait bounds how long new allocations wait for the cleanup of
// those that ended while this client was away (see sync).
const cleanupWait = 30 * time.Second

// sync starts runners for new allocs, updates the others, and stops and
// removes those the servers no longer list. It returns the runners it
// stopped or cleaned up, which new allocs wait for.
//
// An alloc the servers say is over (lost while this node was cut off or
// down, or ended under an earlier client) that still has something here
// (task handles, its alloc dir) gets a cleanup runner: it kills what still
// runs of it, plugin tasks included, and unmounts its volumes, then its
// dir is removed. Workloads are stopped and cleaned up before plugins, so
// that their volumes are unmounted while the plugin still runs; new
// allocs start once all of it is done (up to cleanupWait).
func (w *allocWatcher) sync(allocs []*structs.Allocation) (before []*allocrunner.Runner) {
	listed := make(map[string]bool, len(allocs))
	type update struct {
		r *allocrunner.Runner
		a *structs.Allocation
	}
	var updates []update
	var cleanups, fresh []*allocrunner.Runner
	w.mu.Lock()
	pending := w.cleanups[:0:0]
	for _, r := range w.cleanups {
		if !isDone(r.Done()) {
			pending = append(pending, r)
		}
	}
	for _, a := range allocs {
		listed[a.ID] = true
		if r := w.runners[a.ID]; r != nil {
			updates = append(updates, update{r, a})
			continue
		}
		cleanup := false
		if a.ClientTerminalStatus() {
			if allocrunner.CheckName("alloc ID", a.ID) != nil || !allocrunner.HasLocalState(w.c.config.DataDir, a.ID) {
				continue // over, and nothing of it is here
			}
			a = a.Copy()
			a.DesiredStatus = structs.AllocDesiredStatusStop
			cleanup = true
			w.c.logger.Info("cleaning up an allocation that ended while this client was away",
				"alloc_id", a.ID, "client_status", a.ClientStatus)
		}
		r, err := allocrunner.New(allocrunner.Config{
			Alloc:          a,
			NodeID:         w.c.nodeID,
			NodeName:       w.c.config.NodeName,
			DataDir:        w.c.config.DataDir,
			Servers:        nodeRPC{w.c},
			Volumes:        w.c.volumes,
			ExternalNodeID: w.c.externalNodeID,
			OnUpdate:       w.onUpdate,
			Logger:         w.c.logger,
			Plugins:        w.c.registry,
			AllowRootTasks: w.c.config.AllowRootTasks,
			Users:          w.c.users,
			CoreMHz:        w.c.resources.MHzPerCore(),
			Cores:          w.c.cores,
			Docker:         w.c.docker,

			PluginProbeInterval: w.c.config.ProbeInterval,
		})
		if err != nil {
			w.c.logger.Error("cannot run allocation", "alloc_id", a.ID, "error", err)
			w.onUpdate(&structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusFailed, ClientDescription: err.Error()})
			continue
		}
		w.runners[a.ID] = r
		if cleanup {
			cleanups = append(cleanups, r)
			pending = append(pending, r)
		} else {
			fresh = append(fresh, r)
		}
	}
	w.cleanups = pending
	var gone []*allocrunner.Runner
	for id, r := range w.runners {
		if !listed[id] {
			gone = append(gone, r)
			delete(w.runners, id)
		}
	}
	w.mu.Unlock()
	// Workloads stop first, plugins once those are done: a plugin task
	// must outlive the unmount of the volumes it serves.
	var stopping []*allocrunner.Runner // the workloads this sync stops
	var later []func()                 // what stops plugins
	var plugins []*allocrunner.Runner  // the plugins this sync stops
	for _, u := range updates {
		stop := u.a.DesiredStatus == structs.AllocDesiredStatusStop
		switch {
		case stop && u.r.RunsPlugin():
			later = append(later, func() { u.r.Update(u.a) })
			plugins = append(plugins, u.r)
		case stop:
			stopping = append(stopping, u.r)
			fallthrough
		default:
			u.r.Update(u.a)
		}
	}
	for _, r := range gone {
		if r.RunsPlugin() {
			later = append(later, r.Stop)
			plugins = append(plugins, r)
		} else {
			r.Stop()
			stopping = append(stopping, r)
		}
		go func() {
			<-r.Done()
			if err := r.Destroy(); err != nil {
				w.c.logger.Warn("cannot remove allocation", "alloc_id", r.ID(), "error", err)
			}
		}()
	}
	for _, r := range cleanups {
		if !r.RunsPlugin() {
			stopping = append(stopping, r)
		}
	}
	// Plugins wait for every workload still stopping, this sync's and
	// those of earlier ones (a job stop, then its plugin's a moment later).
	draining := w.drain(stopping)
	for _, r := range cleanups {
		go func() {
			if r.RunsPlugin() {
				waitAll(draining, cleanupWait)
			}
			r.Run()
			if err := r.Destroy(); err != nil {
				w.c.logger.Warn("cannot remove a cleaned-up allocation; its volumes are retried", "alloc_id", r.ID(), "error", err)
			}
		}()
	}
	if len(later) > 0 {
		go func() {
			waitAll(draining, cleanupWait)
			for _, f := range later {
				f()
			}
		}()
	}
	// New allocs start once what this sync stops is done: a plugin task
	// killed late must not take its successor's socket with it.
	before = slices.Concat(pending, stopping, plugins)
	for _, r := range fresh {
		go func() {
			waitAll(before, cleanupWait)
			r.Run()
		}()
	}
	notify(w.reconcileKick)
	return before
}

// drain adds stopping to the workloads being stopped and returns those
// not yet done.
func (w *allocWatcher) drain(stopping []*allocrunner.Runner) []*allocrunner.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range stopping {
		if !slices.Contains(w.draining, r) {
			w.draining = append(w.draining, r)
		}
	}
	w.draining = slices.DeleteFunc(w.draining, func(r *allocrunner.Runner) bool { return isDone(r.Done()) })
	return slices.Clone(w.draining)
}

// settleAfter settles the client once the runners a sync stopped or
// cleaned up are done and the volumes of allocations it no longer runs
// are unmounted (tried once; the reconciler keeps trying).
func (w *allocWatcher) settleAfter(ctx context.Context, before []*allocrunner.Runner) {
	waitAll(before, cleanupWait)
	if ctx.Err() != nil {
		return
	}
	w.reconcileOnce(ctx)
	w.c.settle()
}

// waitAll waits for the runners to be done, up to timeout in all.
func waitAll(runners []*allocrunner.Runner, timeout time.Duration) {
	deadline := time.After(timeout)
	for _, r := range runners {
		select {
		case <-r.Done():
		case <-deadline:
			return
		}
	}
}

// onUpdate is every runner's OnUpdate: the latest view of each alloc waits
// to be sent.
func (w *allocWatcher) onUpdate(a *structs.Allocation) {
	w.updMu.Lock()
	w.pending[a.ID] = a
	w.updMu.Unlock()
	notify(w.kick)
}

// send sends the pending updates in one Node.UpdateAlloc. A batch the
// servers refuse is dropped; one that failed otherwise is put back for the
// next try, except the allocs updated again meanwhile (their newer update
// is sent instead).
func (w *allocWatcher) send(ctx context.Context) error {
	w.updMu.Lock()
	batch := w.pending
	w.pending = map[string]*structs.Allocation{}
	w.updMu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	req := &structs.AllocUpdateRequest{Allocs: make([]*structs.Allocation, 0, len(batch))}
	for _, a := range batch {
		req.Allocs = append(req.Allocs, a)
	}
	sort.Slice(req.Allocs, func(i, j int) bool { return req.Allocs[i].ID < req.Allocs[j].ID })
	err := w.c.rpc(ctx, "Node.UpdateAlloc", req, &structs.GenericResponse{})
	if err == nil || ctx.Err() != nil {
		return err
	}
	if errors.Is(err, structs.ErrBadRequest) || errors.Is(err, structs.ErrNotFound) {
		w.c.logger.Error("servers refused allocation updates; dropping them", "error", err)
		return nil
	}
	w.updMu.Lock()
	for id, a := range batch {
		if _, newer := w.pending[id]; !newer {
			w.pending[id] = a
		}
	}
	w.updMu.Unlock()
	return err
}

// externalNodeID is the plugin's own ID for this node, from its
// fingerprint.
func (c *Client) externalNodeID(pluginID string) (string, bool) {
	_, nodes, _ := c.updater.fingerprint()
	info := nodes[pluginID]
	if info == nil || info.NodeInfo == nil || info.NodeInfo.ID == "" {
		return "", false
	}
	return info.NodeInfo.ID, true
}
