package client

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/exec"
)

// strayTimeout bounds the listing and removal of stray containers.
const strayTimeout = 30 * time.Second

// removeStrayContainers removes the containers of this client's tasks
// (berth's labels, logs under its data dir: another client on the same
// engine keeps its own) that no allocation here accounts for: neither a
// runner nor the state a runner would be built from. Such a container
// was left by a start that failed halfway, or by an alloc whose state
// went with its dir. It runs once the first sync has settled the client,
// so every alloc the servers still list has its runner.
func (w *allocWatcher) removeStrayContainers(ctx context.Context) {
	d := w.c.docker
	if d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, strayTimeout)
	defer cancel()
	owned, err := d.Owned(ctx)
	if err != nil {
		w.c.logger.Warn("cannot list this client's containers; strays stay until the next start", "error", err)
		return
	}
	mine := filepath.Clean(w.c.config.DataDir) + "/"
	w.mu.Lock()
	known := make(map[string]bool, len(w.runners))
	for id := range w.runners {
		known[id] = true
	}
	w.mu.Unlock()
	for _, o := range owned {
		if !strings.HasPrefix(o.Labels[docker.LabelStdoutPath], mine) || known[o.AllocID] ||
			allocrunner.HasLocalState(w.c.config.DataDir, o.AllocID) {
			continue
		}
		if err := d.Remove(ctx, o.ContainerID); err != nil {
			w.c.logger.Warn("cannot remove a stray container", "alloc_id", o.AllocID, "task", o.TaskName, "container_id", o.ContainerID, "error", err)
			continue
		}
		w.c.logger.Info("removed a container no allocation here accounts for", "alloc_id", o.AllocID, "task", o.TaskName,
			"container_id", o.ContainerID, "was_running", o.Running)
	}
}

// strayCgroupAge is how old an empty task cgroup of an alloc this client
// does not run must be before it is removed: older than any start under
// way (a group is made just before its task's init joins it).
const strayCgroupAge = 2 * time.Minute

// removeStrayCgroups removes the empty task cgroups of allocations that
// neither a runner nor the state here accounts for (left by a client
// that died mid-start), once the first sync has settled the client.
func (w *allocWatcher) removeStrayCgroups() {
	w.mu.Lock()
	known := make(map[string]bool, len(w.runners))
	for id := range w.runners {
		known[id] = true
	}
	w.mu.Unlock()
	keep := func(allocID string) bool {
		return known[allocID] || allocrunner.HasLocalState(w.c.config.DataDir, allocID)
	}
	for _, g := range exec.SweepCgroups(keep, strayCgroupAge) {
		w.c.logger.Info("removed an empty task cgroup no allocation here accounts for", "cgroup", g)
	}
}
