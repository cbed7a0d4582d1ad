package command

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// pluginWaitDefault bounds the wait for a job's plugins to register when
// no task sets a longer health_timeout (the client's default).
const pluginWaitDefault = 30 * time.Second

// pluginWaitPoll is how often a waiting job run asks for a plugin the
// servers do not know yet; once they do, it waits for the plugin's next
// change by blocking query, for up to pluginWaitBlock at a time.
var (
	pluginWaitPoll  = 50 * time.Millisecond
	pluginWaitBlock = 5 * time.Second
)

// pluginNeed is how many healthy instances of one plugin a job's running
// allocations should have registered.
type pluginNeed struct {
	id                 string
	nodes, controllers int
}

// jobPlugins is what the job's running allocations should register, by
// plugin ID order, and how long to wait for it.
func jobPlugins(job *structs.Job, allocs []*structs.AllocListStub) ([]pluginNeed, time.Duration) {
	running := map[string]int{} // group -> running allocations
	for _, a := range allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusRunning {
			running[a.TaskGroup]++
		}
	}
	needs := map[string]*pluginNeed{}
	wait := pluginWaitDefault
	for _, tg := range job.TaskGroups {
		if tg == nil || running[tg.Name] == 0 {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil || t.CSIPluginConfig == nil {
				continue
			}
			pc := t.CSIPluginConfig
			n := needs[pc.ID]
			if n == nil {
				n = &pluginNeed{id: pc.ID}
				needs[pc.ID] = n
			}
			if pc.Type != structs.CSIPluginTypeController {
				n.nodes += running[tg.Name]
			}
			if pc.Type != structs.CSIPluginTypeNode {
				n.controllers += running[tg.Name]
			}
			wait = max(wait, time.Duration(pc.HealthTimeout))
		}
	}
	out := make([]pluginNeed, 0, len(needs))
	for _, n := range needs {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, wait
}

// waitPlugins waits, once the job's allocations run, until the plugins
// its tasks run are registered and healthy on the servers, so that
// `berth plugin status` right after `job run` finds them.
func (m *meta) waitPlugins(ctx context.Context, c *api.Client, job *structs.Job) int {
	allocs, _, err := c.Jobs().Allocations(job.ID, nil)
	if err != nil {
		return m.fail("%s", apiError("read the allocations of job "+strconv.Quote(job.ID), err))
	}
	needs, wait := jobPlugins(job, allocs)
	deadline := time.Now().Add(wait)
	for _, n := range needs {
		said := false
		var index uint64 // the plugin's, once the servers know it
		for {
			q := &api.QueryOptions{WaitIndex: index, WaitTime: max(min(time.Until(deadline), pluginWaitBlock), time.Millisecond)}
			p, qm, err := c.CSIPlugins().Info(n.id, q)
			if err != nil && !errors.Is(err, structs.ErrNotFound) {
				return m.fail("%s", apiError("read plugin "+strconv.Quote(n.id), err))
			}
			if p != nil && p.NodesHealthy >= n.nodes && p.ControllersHealthy >= n.controllers {
				fmt.Fprintf(m.stdout, "==> Plugin %q registered: controllers %d/%d healthy, nodes %d/%d healthy\n",
					n.id, p.ControllersHealthy, p.ControllersExpected, p.NodesHealthy, p.NodesExpected)
				break
			}
			if !said {
				fmt.Fprintf(m.stdout, "==> Waiting for plugin %q to be registered healthy (%s, %s)...\n",
					n.id, plural(n.nodes, "node instance"), plural(n.controllers, "controller instance"))
				said = true
			}
			if time.Now().After(deadline) {
				return m.fail("job %q: plugin %q is not registered healthy after %s; its tasks run: see \"berth plugin status %s\" and \"berth alloc logs\"",
					job.ID, n.id, wait.Round(time.Second), n.id)
			}
			if p != nil && qm != nil {
				index = qm.LastIndex // the next read waits for a change
				continue
			}
			select {
			case <-ctx.Done():
				return m.fail("stopped waiting for plugin %q; job %q stays registered", n.id, job.ID)
			case <-time.After(pluginWaitPoll):
			}
		}
	}
	return exitOK
}
