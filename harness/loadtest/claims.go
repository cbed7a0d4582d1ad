package loadtest

import (
	"fmt"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// The job whose allocations the claim runs claim for, and the source of
// its per_alloc volume: alloc i claims volume "lt-claim[i]".
const (
	claimJob    = "lt-claims"
	claimSource = "lt-claim"
)

// ClaimTarget is a running allocation and the volume its group asks for.
type ClaimTarget struct {
	VolumeID string
	AllocID  string
}

// SetupClaims creates k volumes through berth (the mock makes them), runs
// a job of k allocations on the client, each asking for its own volume
// (per_alloc), and waits until every allocation runs with its claim
// taken. A claim must name an allocation whose group asks for the
// volume; these are the ones the claim runs renew.
func (c *Cluster) SetupClaims(at *Agent, k int) ([]ClaimTarget, error) {
	cl := c.API(at)
	vol := &structs.VolumeRequest{Name: "data", Type: "csi", Source: claimSource, PerAlloc: true,
		AccessMode: volumeCapability.AccessMode, AttachmentMode: volumeCapability.AttachmentMode}
	for i := range k {
		id := vol.SourceFor(i)
		spec := &api.VolumeSpec{ID: id, Name: id, PluginID: PluginID,
			RequestedCapabilities: []*structs.CSIVolumeCapability{volumeCapability}}
		if _, _, err := cl.CSIVolumes().Create(spec); err != nil {
			return nil, fmt.Errorf("loadtest: create volume %s: %w", id, err)
		}
	}
	job := &structs.Job{ID: claimJob, Name: claimJob, Type: "service", TaskGroups: []*structs.TaskGroup{{
		Name: "g", Count: k,
		Volumes: map[string]*structs.VolumeRequest{"data": vol},
		Tasks: []*structs.Task{{Name: "t", Driver: "exec", KillTimeout: time.Second,
			Config: map[string]any{"command": "/bin/sleep", "args": []string{"1000000"}}}},
	}}}
	if _, _, err := cl.Jobs().Register(job); err != nil {
		return nil, fmt.Errorf("loadtest: run job %s: %w", claimJob, err)
	}
	var targets []ClaimTarget
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for {
		targets, last = c.claimTargets(cl, vol, k)
		if targets != nil {
			return targets, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("loadtest: job %s: not %d allocations running with their claims after 90s: %s", claimJob, k, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// claimTargets is the k allocations of the claim job with their volumes
// once each runs and holds its claim; else nil and what is missing.
func (c *Cluster) claimTargets(cl *api.Client, vol *structs.VolumeRequest, k int) ([]ClaimTarget, string) {
	allocs, _, err := cl.Jobs().Allocations(claimJob, nil)
	if err != nil {
		return nil, err.Error()
	}
	targets := make([]ClaimTarget, k)
	running := 0
	for _, a := range allocs {
		idx, ok := structs.AllocIndex(a.Name)
		if a.ClientStatus != structs.AllocClientStatusRunning || !ok || idx >= k {
			continue
		}
		v, _, err := cl.CSIVolumes().Info(vol.SourceFor(idx), nil)
		if err != nil {
			return nil, err.Error()
		}
		if claim := v.WriteClaims[a.ID]; claim == nil || claim.State != structs.CSIVolumeClaimStateTaken {
			return nil, fmt.Sprintf("alloc %s runs without its claim on %s", a.Name, v.ID)
		}
		targets[idx] = ClaimTarget{VolumeID: v.ID, AllocID: a.ID}
		running++
	}
	if running != k {
		return nil, fmt.Sprintf("%d of %d allocations running", running, k)
	}
	return targets, ""
}

// ClaimRun sends claims at agent at, callers at a time, for d: each takes
// again (renews) the write claim of one of the running allocations on its
// own volume, the callers going round the targets.
func (c *Cluster) ClaimRun(at *Agent, callers int, d time.Duration, targets []ClaimTarget) (Throughput, error) {
	cl := c.API(at)
	return runFor(callers, d, func(caller, n int) error {
		tg := targets[(caller+n)%len(targets)]
		_, _, err := cl.CSIVolumes().Claim(&structs.CSIVolumeClaimRequest{VolumeID: tg.VolumeID, AllocationID: tg.AllocID,
			Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken})
		if err != nil {
			return fmt.Errorf("loadtest: claim volume %s for alloc %s: %w", tg.VolumeID, tg.AllocID, err)
		}
		return nil
	})
}
