package allocrunner

import (
	"os"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// EventResourcesNotEnforced says a task runs without its limits: the
// client does not run as root, so it makes no cgroups.
const EventResourcesNotEnforced = "Resources Not Enforced"

// limits are the task's resources as its driver enforces them: its CPU
// weight (MHz, or its cores' compute), its cores, its memory limit
// (memory_max, else memory) and, under a higher limit, memory as what the
// kernel reclaims it down to first. coreMHz is one of this node's cores'
// compute.
func limits(t *structs.Task, coreMHz int, cpuset string) *exec.Limits {
	r := t.ResourcesOrDefault()
	shares := r.CPU
	if r.Cores > 0 {
		shares = r.Cores * max(coreMHz, 1)
	}
	l := &exec.Limits{CPUShares: uint64(max(shares, 2)), Cpuset: cpuset, MemoryBytes: int64(r.MemoryLimitMB()) << 20}
	if r.MemoryMaxMB > r.MemoryMB {
		l.MemoryLowBytes = int64(r.MemoryMB) << 20
	}
	return l
}

// enforced reports whether this client can enforce tasks' limits: it
// makes cgroups as root only.
func enforced() bool { return os.Geteuid() == 0 }
