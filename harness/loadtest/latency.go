package loadtest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

// The steps the caller sees, around the ones the servers and the client
// stamp (structs.Step*): when it sent a request and when a blocking query
// answered with the change.
const (
	StepSubmitted     = "job run sent"
	StepSeenRunning   = "seen running"
	StepStopSubmitted = "job stop sent"
	StepSeenFreed     = "seen freed"
)

// RunSteps and StopSteps are the claim workflow's steps in the order they
// are taken: the timeline's gaps are between neighbours here.
var (
	RunSteps = []string{StepSubmitted, structs.StepPlaced, structs.StepReceived, structs.StepVolumesMounted,
		structs.StepTasksStarted, StepSeenRunning}
	StopSteps = []string{StepStopSubmitted, structs.StepStopRequested, structs.StepStopSeen, structs.StepSignalSent,
		structs.StepTasksExited, structs.StepVolumesUnmounted, structs.StepTerminalReported, structs.StepReleaseStarted,
		structs.StepNodeUnpublished, structs.StepControllerUnpublished, structs.StepFreed, StepSeenFreed}
)

// Cycle is one claim workflow's timeline: the caller's steps, the
// allocation's and its claim's, by step name.
type Cycle map[string]time.Time

// Gap is the time from step from to step to (both taken: TestLatency
// checks every cycle has every step).
func (c Cycle) Gap(from, to string) time.Duration { return c[to].Sub(c[from]) }

// latencyJob is the writer of volume vol: one exec task that exits at
// once on SIGTERM (sleep's default), kill_timeout 100 ms.
func latencyJob(id, vol string) *structs.Job {
	return &structs.Job{ID: id, Name: id, Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{{
		Name: "g", Count: 1,
		Volumes: map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: vol,
			AccessMode: volumeCapability.AccessMode, AttachmentMode: volumeCapability.AttachmentMode}},
		Tasks: []*structs.Task{{Name: "t", Driver: "exec", KillTimeout: 100 * time.Millisecond,
			Config:       map[string]any{"command": "/bin/sleep", "args": []string{"1000000"}},
			VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/data"}}}},
	}}}
}

// PluginJob runs the csi-test mock driver as a plugin task of plugin id
// (monolith; a plugin task runs as root) through agent at, and returns
// the time from sending the job until a blocking query on the plugin at
// the same agent answered it healthy as node and controller.
func (c *Cluster) PluginJob(at *Agent, id string) (time.Duration, error) {
	cl := c.API(at)
	job := &structs.Job{ID: "plugin-" + id, Name: "plugin-" + id, Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "p", Count: 1, Tasks: []*structs.Task{{
			Name: "plugin", Driver: "exec", KillTimeout: time.Second,
			Config:          map[string]any{"command": csitest.MockDriverPath(c.t), "args": []string{"-name=" + csitest.DefaultMockName}},
			CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: id, Type: structs.CSIPluginTypeMonolith, MountDir: "/csi"},
		}}}}}
	start := time.Now()
	if _, _, err := cl.Jobs().Register(job); err != nil {
		return 0, fmt.Errorf("loadtest: run plugin job %s: %w", job.ID, err)
	}
	err := c.watch(cl, 30*time.Second, func(q *api.QueryOptions) (uint64, bool, error) {
		p, qm, err := cl.CSIPlugins().Info(id, q)
		if errors.Is(err, structs.ErrNotFound) {
			return q.WaitIndex, false, nil // not fingerprinted yet: read again
		}
		if err != nil {
			return 0, false, err
		}
		return qm.LastIndex, p.NodesHealthy == 1 && p.ControllersHealthy == 1, nil
	})
	if err != nil {
		return 0, fmt.Errorf("loadtest: plugin %s healthy: %w", id, err)
	}
	return time.Since(start), nil
}

// watch runs read as a blocking query from index 0 until it says done,
// or fails once timeout has passed. read returns the index to wait past
// next.
func (c *Cluster) watch(cl *api.Client, timeout time.Duration, read func(q *api.QueryOptions) (uint64, bool, error)) error {
	deadline := time.Now().Add(timeout)
	q := &api.QueryOptions{WaitTime: time.Second}
	for time.Now().Before(deadline) {
		index, done, err := read(q)
		if err != nil || done {
			return err
		}
		if index <= q.WaitIndex {
			time.Sleep(5 * time.Millisecond) // a read that did not move: never spin
		}
		q.WaitIndex = index
	}
	return fmt.Errorf("not done after %s", timeout)
}

// CreateAndRegister creates volume id through berth (the plugin makes
// it), reads it and deregisters it, then registers it again on the same
// storage volume, where it stays: the create's time and the register's,
// each from sending it until its answer.
func (c *Cluster) CreateAndRegister(at *Agent, plugin, id string) (create, register time.Duration, err error) {
	cl := c.API(at)
	spec := &api.VolumeSpec{ID: id, Name: id, PluginID: plugin, RequestedCapabilities: []*structs.CSIVolumeCapability{volumeCapability}}
	start := time.Now()
	if _, _, err := cl.CSIVolumes().Create(spec); err != nil {
		return 0, 0, fmt.Errorf("loadtest: create volume %s: %w", id, err)
	}
	create = time.Since(start)
	vol, _, err := cl.CSIVolumes().Info(id, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("loadtest: read created volume %s: %w", id, err)
	}
	if _, err := cl.CSIVolumes().Deregister(id, false); err != nil {
		return 0, 0, fmt.Errorf("loadtest: deregister volume %s: %w", id, err)
	}
	spec.ExternalID = vol.ExternalID
	start = time.Now()
	if _, _, err := cl.CSIVolumes().Register(spec); err != nil {
		return 0, 0, fmt.Errorf("loadtest: register volume %s on %s: %w", id, vol.ExternalID, err)
	}
	register = time.Since(start)
	return create, register, nil
}

// ClaimCycle runs a writer of volume vol (which must exist, unclaimed)
// through agent at, waits (blocking queries at the same agent) until its
// allocation runs, stops it and waits until its claim is freed, and
// returns the cycle's timeline: the caller's steps, the allocation's and
// its claim's.
func (c *Cluster) ClaimCycle(at *Agent, jobID, vol string) (Cycle, error) {
	cl := c.API(at)
	cycle := Cycle{StepSubmitted: time.Now()}
	if _, _, err := cl.Jobs().Register(latencyJob(jobID, vol)); err != nil {
		return nil, fmt.Errorf("loadtest: run job %s: %w", jobID, err)
	}
	var allocID string
	err := c.watch(cl, 60*time.Second, func(q *api.QueryOptions) (uint64, bool, error) {
		allocs, qm, err := cl.Jobs().Allocations(jobID, q)
		if err != nil {
			return 0, false, err
		}
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusFailed {
				return 0, false, fmt.Errorf("alloc %s failed", a.ID)
			}
			if a.ClientStatus == structs.AllocClientStatusRunning {
				allocID = a.ID
				return qm.LastIndex, true, nil
			}
		}
		return qm.LastIndex, false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("loadtest: job %s running: %w", jobID, err)
	}
	cycle[StepSeenRunning] = time.Now()

	cycle[StepStopSubmitted] = time.Now()
	if _, err := cl.Jobs().Deregister(jobID, false); err != nil {
		return nil, fmt.Errorf("loadtest: stop job %s: %w", jobID, err)
	}
	var claim *structs.CSIVolumeClaim
	err = c.watch(cl, 60*time.Second, func(q *api.QueryOptions) (uint64, bool, error) {
		v, qm, err := cl.CSIVolumes().Info(vol, q)
		if err != nil {
			return 0, false, err
		}
		claim = v.ClaimOf(allocID)
		return qm.LastIndex, claim != nil && claim.State == structs.CSIVolumeClaimStateFreed, nil
	})
	if err != nil {
		return nil, fmt.Errorf("loadtest: claim of alloc %s on %s freed: %w", allocID, vol, err)
	}
	cycle[StepSeenFreed] = time.Now()

	// The allocation's last steps (its terminal report) may reach this
	// agent after the claim's: read it once it has them.
	var alloc *structs.Allocation
	err = c.watch(cl, 10*time.Second, func(q *api.QueryOptions) (uint64, bool, error) {
		a, qm, err := cl.Allocations().Info(allocID, q)
		if err != nil {
			return 0, false, err
		}
		alloc = a
		return qm.LastIndex, a.Timeline.Has(structs.StepTerminalReported), nil
	})
	if err != nil {
		return nil, fmt.Errorf("loadtest: alloc %s terminal: %w", allocID, err)
	}
	for _, s := range slices.Concat(alloc.Timeline, claim.Timeline) {
		cycle[s.Step] = s.At
	}
	return cycle, nil
}

// CreateBurst creates n volumes of plugin through agent at, callers at a
// time, as fast as the answers come: a burst of writes.
func (c *Cluster) CreateBurst(at *Agent, plugin string, n, callers int) (time.Duration, error) {
	cl := c.API(at)
	return runCount(callers, n, func(i int) error {
		id := fmt.Sprintf("lat-burst-%06d", i)
		spec := &api.VolumeSpec{ID: id, Name: id, PluginID: plugin, RequestedCapabilities: []*structs.CSIVolumeCapability{volumeCapability}}
		if _, _, err := cl.CSIVolumes().Create(spec); err != nil {
			return fmt.Errorf("loadtest: create volume %s: %w", id, err)
		}
		return nil
	})
}

// WireLists lists every volume at agent at reps times, each to the last
// byte of the answer, undecoded (so the caller's own decoding is not
// counted), and returns the times in order: the first is the first list
// after whatever came before.
func (c *Cluster) WireLists(at *Agent, reps int) (Latencies, error) {
	_, wire, err := c.listWire(at, false, reps)
	return wire, err
}
