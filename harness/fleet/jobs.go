package fleet

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// The jobs the simulator runs, and the source of the claims job's
// per_alloc volumes: allocation i claims volume "fleet-claim[i]".
const (
	SystemJobID = "fleet-system"
	ClaimsJobID = "fleet-claims"
	claimSource = "fleet-claim"
)

// task is a docker task: the scheduler places it only on nodes that
// report the docker driver healthy, as every simulated node does.
func task() *structs.Task {
	return &structs.Task{Name: "t", Driver: structs.DriverDocker, KillTimeout: time.Second,
		Config: map[string]any{"image": "busybox:1.36", "command": "sleep", "args": []string{"1000000"}}}
}

// SystemJob is a system job of one docker task: one allocation on every
// ready node.
func SystemJob() *structs.Job {
	return &structs.Job{ID: SystemJobID, Name: SystemJobID, Type: structs.JobTypeSystem,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{task()}}}}
}

// RegisterClaims registers k volumes of NodePlugin (node side only: no
// controller is asked) and runs a service job of k allocations, each
// claiming its own volume (per_alloc) for writing, constrained to the
// nodes that will be cut (meta fleet_cut = "true"). A claim is reserved
// when its allocation is placed. It checks that every allocation was
// placed on such a node with its claim taken, and returns the nodes of
// the allocations, by allocation ID.
func RegisterClaims(cl *api.Client, k int, cut map[string]bool) (map[string]string, error) {
	capability := &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
	vol := &structs.VolumeRequest{Name: "data", Type: "csi", Source: claimSource, PerAlloc: true,
		AccessMode: capability.AccessMode, AttachmentMode: capability.AttachmentMode}
	for i := range k {
		id := vol.SourceFor(i)
		spec := &api.VolumeSpec{ID: id, Name: id, ExternalID: "ext-" + id, PluginID: NodePlugin,
			RequestedCapabilities: []*structs.CSIVolumeCapability{capability}}
		if _, _, err := cl.CSIVolumes().Register(spec); err != nil {
			return nil, fmt.Errorf("fleet: register volume %s of plugin %s: %w", id, NodePlugin, err)
		}
	}
	job := &structs.Job{ID: ClaimsJobID, Name: ClaimsJobID, Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: k,
			Volumes:     map[string]*structs.VolumeRequest{"data": vol},
			Constraints: []*structs.Constraint{{Attribute: "${meta." + MetaCut + "}", Operator: structs.ConstraintEqual, Value: "true"}},
			Tasks:       []*structs.Task{task()}}}}
	resp, _, err := cl.Jobs().Register(job)
	if err != nil {
		return nil, fmt.Errorf("fleet: run job %s: %w", ClaimsJobID, err)
	}
	if len(resp.Failures) > 0 || len(resp.Placed) != k {
		return nil, fmt.Errorf("fleet: job %s placed %d of %d allocations on the nodes to cut: %s", ClaimsJobID, len(resp.Placed), k, failures(resp.Failures))
	}
	onNode := map[string]string{}
	for _, a := range resp.Placed {
		idx, ok := structs.AllocIndex(a.Name)
		if !ok || !cut[a.NodeID] {
			return nil, fmt.Errorf("fleet: job %s: alloc %s placed on node %s, which is not to be cut (its constraint is meta.%s = true)",
				ClaimsJobID, a.Name, a.NodeID, MetaCut)
		}
		v, _, err := cl.CSIVolumes().Info(vol.SourceFor(idx), nil)
		if err != nil {
			return nil, fmt.Errorf("fleet: read volume %s: %w", vol.SourceFor(idx), err)
		}
		if c := v.WriteClaims[a.ID]; c == nil || c.State != structs.CSIVolumeClaimStateTaken || c.NodeID != a.NodeID {
			return nil, fmt.Errorf("fleet: volume %s holds no taken write claim of alloc %s on node %s after its placement", v.ID, a.Name, a.NodeID)
		}
		onNode[a.ID] = a.NodeID
	}
	return onNode, nil
}

// failures renders a register's placement failures.
func failures(fs []*structs.PlacementFailure) string {
	if len(fs) == 0 {
		return "no failure reported"
	}
	out := ""
	for _, f := range fs {
		out += fmt.Sprintf("group %s: %d missing: %v; ", f.TaskGroup, f.Missing, f.Reasons)
	}
	return out
}

// AllocWatch is the simulated nodes' watch of their allocations, as a
// client agent's (client/alloc_watcher.go): a Node.GetClientAllocs that
// answers at once, then blocking ones from the index it answered, until
// an allocation of the job watched for is among them.
type AllocWatch struct {
	armed  atomic.Int64 // nodes whose first read was answered
	failed atomic.Int64

	mu   sync.Mutex
	seen map[string]time.Time // node ID -> when its read showed the job's allocation
}

// WatchAllocs starts the watch of every node of nodes for an allocation
// of job jobID, the first reads arming at most arming at a time. Each
// node's watch ends once it saw one, or when the fleet stops.
func (f *Fleet) WatchAllocs(nodes []*Node, jobID string, arming int) *AllocWatch {
	w := &AllocWatch{seen: map[string]time.Time{}}
	sem := make(chan struct{}, max(arming, 1))
	for _, n := range nodes {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			select {
			case sem <- struct{}{}:
			case <-f.ctx.Done():
				return
			}
			var index uint64
			for failures := 0; f.ctx.Err() == nil; {
				req := &structs.NodeSpecificRequest{NodeID: n.ID,
					QueryOptions: structs.QueryOptions{MinQueryIndex: index, MaxQueryTime: 30 * time.Second, AuthToken: n.Secret}}
				var resp structs.NodeClientAllocsResponse
				if err := n.conn.call(f.ctx, 40*time.Second, "Node.GetClientAllocs", req, &resp); err != nil {
					w.failed.Add(1)
					f.noteErr(fmt.Errorf("fleet: allocations of node %s at %s: %w", n.Name, n.conn.addr, err))
					failures++
					backoff.Sleep(f.ctx, serverRetry.Delay(failures))
					continue
				}
				if index == 0 {
					w.armed.Add(1)
					<-sem
				}
				for _, a := range resp.Allocs {
					if a.JobID == jobID {
						w.mu.Lock()
						w.seen[n.ID] = time.Now()
						w.mu.Unlock()
						return
					}
				}
				index, failures = max(resp.Index, 1), 0
			}
		}()
	}
	return w
}

// Armed is how many nodes' first read was answered: their next read
// blocks.
func (w *AllocWatch) Armed() int { return int(w.armed.Load()) }

// Failed is how many reads failed (each was tried again).
func (w *AllocWatch) Failed() int { return int(w.failed.Load()) }

// Seen is when each node saw the job's allocation, by node ID.
func (w *AllocWatch) Seen() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.seen)
}
