package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"github.com/berth-csi/berth/client/drivers/docker"
	"maps"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-csi/berth/structs"
)

// EventFenced is the task event of a task stopped by its own client,
// cut off from the servers.
const EventFenced = "Fenced"

// Fenceable reports whether the client should stop the alloc when it
// cannot reach the servers: it claims a volume for writing and its group
// does not opt out (disconnect { stop_on_client = false }).
func (r *Runner) Fenceable() bool {
	return r.tg != nil && r.tg.WritesVolumes() && r.tg.StopsOnClient()
}

// RunsPlugin reports whether a task of the alloc is a CSI plugin: such
// allocs are stopped after those whose volumes they may serve.
func (r *Runner) RunsPlugin() bool {
	if r.tg == nil {
		return false
	}
	for _, t := range r.tg.Tasks {
		if t.CSIPluginConfig != nil {
			return true
		}
	}
	return false
}

// Fence stops the alloc because the client has not reached the servers
// for why's sake: its tasks get their stop signal at once and SIGKILL
// within killWithin whatever their kill_timeout, its volumes are
// unmounted, and it ends lost, with why (the servers then stop it and may
// replace it, as when its node goes down). It also bounds a stop already
// under way, which keeps its own outcome. Calling it again does nothing
// more.
func (r *Runner) Fence(why string, killWithin time.Duration) {
	r.mu.Lock()
	if r.fenceReason != "" || r.finished {
		r.mu.Unlock()
		return
	}
	r.fenceReason = why
	r.fenceEndsIt = !r.stopping()
	r.mu.Unlock()
	r.logger.Warn("fencing the allocation: stopping its tasks", "reason", why, "kill_within", killWithin)
	time.AfterFunc(killWithin, func() { r.killNowOnce.Do(func() { close(r.killNow) }) })
	r.Stop()
}

// fenceEvent is the event a fenced task records, nil if not fenced.
func (r *Runner) fenceEvent() *structs.TaskEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenceReason == "" {
		return nil
	}
	return event(EventFenced, r.fenceReason)
}

// LocalAllocs lists the allocs this node keeps task handles of (none if
// it keeps no state dir yet).
func LocalAllocs(dataDir string) ([]string, error) {
	entries, err := os.ReadDir(stateDir(dataDir))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("allocrunner: list the allocs' state: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && CheckName("alloc ID", id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// FenceOrphan fences an alloc this client has no runner for yet (it
// restarted while cut off from the servers): if the alloc is fenceable,
// its tasks still running from before all get SIGTERM at once and SIGKILL
// within killWithin, and their handles are forgotten. It reports whether
// it killed anything. The alloc's volumes are the caller's to unmount. d
// is the client's docker driver, nil when it has none.
func FenceOrphan(ctx context.Context, dataDir, allocID string, killWithin time.Duration, d *docker.Driver) (bool, error) {
	st, err := openState(stateFile(dataDir, allocID))
	if err != nil {
		return false, fmt.Errorf("allocrunner: alloc %s: %w", allocID, err)
	}
	st.mu.Lock()
	fenceable := st.state.Fenceable
	handles := maps.Clone(st.state.Handles)
	st.mu.Unlock()
	if !fenceable {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, killWithin+5*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		killed bool
		errs   []error
		wg     sync.WaitGroup
	)
	for task, hs := range handles {
		wg.Go(func() { // all at once: one deadline for them all
			h, err := reattachRecorded(ctx, hs, d) // nil, nil: it runs no more
			if err == nil && h != nil {
				err = h.Stop(ctx, syscall.SIGTERM, killWithin)
			}
			if err == nil { // killed or gone; an error keeps the handle: it may still run
				err = st.setHandle(task, nil)
			}
			mu.Lock()
			defer mu.Unlock()
			killed = killed || h != nil && err == nil
			if err != nil {
				errs = append(errs, fmt.Errorf("alloc %s: task %q: %w", allocID, task, err))
			}
		})
	}
	wg.Wait()
	return killed, errors.Join(errs...)
}
