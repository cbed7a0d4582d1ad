package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/client/clienttest"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/harness/chaos/check"
)

// PluginPID is the PID of the berth-hostpath task that client a runs, 0
// when none runs.
func (c *Cluster) PluginPID(a *Agent) int {
	want, err := filepath.EvalSymlinks(c.Hostpath)
	if err != nil {
		want = c.Hostpath
	}
	for _, pid := range clienttest.TasksUnder(a.DataDir) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			return pid
		}
	}
	return 0
}

// WorkloadTaskPIDs is the PIDs of the job workload's task shells that
// client a runs (the writers and readers; not their children).
func (c *Cluster) WorkloadTaskPIDs(a *Agent) []int {
	var pids []int
	for _, pid := range clienttest.TasksUnder(a.DataDir) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == "sh" {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// LeftoverMounts reports every volume mount (a staging or per-allocation
// dir) still on a client's host: at the end of a run, when no job but
// the plugin runs, there must be none.
func (c *Cluster) LeftoverMounts() ([]check.Violation, error) {
	var out []check.Violation
	for _, a := range c.Clients {
		mps, err := bexec.MountsUnder(a.DataDir)
		if err != nil {
			return nil, fmt.Errorf("chaos: mounts of client %s: %w", a.Name, err)
		}
		for _, mp := range mps {
			rel, _ := filepath.Rel(a.DataDir, mp)
			parts := strings.Split(rel, string(filepath.Separator))
			// client/csi/<plugin>/{staging,per-alloc}/<volume or alloc ID>/...
			if len(parts) < 5 || parts[0] != "client" || parts[1] != "csi" || (parts[3] != "staging" && parts[3] != "per-alloc") {
				continue
			}
			what := "volume " + parts[4] + " staged"
			vol := parts[4]
			if parts[3] == "per-alloc" {
				what, vol = "published for alloc "+parts[4], ""
			}
			out = append(out, check.Violation{Check: "leftover-mount", VolumeID: vol,
				Detail: fmt.Sprintf("%s on client %s with no job running: %s", what, a.Name, strconv.Quote(mp))})
		}
	}
	return out, nil
}
