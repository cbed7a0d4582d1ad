package client

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
)

// TestNodeResources: the node's cores are those this process may run on,
// its compute their clock's sum, its memory the kernel's total; the
// config's figures replace what is found.
func TestNodeResources(t *testing.T) {
	cfg := DefaultConfig()
	r, err := nodeResources(cfg)
	must.NoError(t, err)
	var set unix.CPUSet
	must.NoError(t, unix.SchedGetaffinity(0, &set))
	must.EqOp(t, set.Count(), r.Cores)
	must.Positive(t, r.CPU)
	must.EqOp(t, 0, r.CPU%r.Cores, must.Sprint("every core counts the same clock"))
	if b, err := os.ReadFile(maxFreqPath); err == nil {
		khz, err := strconv.Atoi(strings.TrimSpace(string(b)))
		must.NoError(t, err)
		must.EqOp(t, r.Cores*(khz/1000), r.CPU, must.Sprint("the clock is cpufreq's maximum where it says one"))
	}
	var si unix.Sysinfo_t
	must.NoError(t, unix.Sysinfo(&si))
	must.EqOp(t, int(uint64(si.Totalram)*uint64(si.Unit)>>20), r.MemoryMB)

	cfg.CPUTotalCompute, cfg.MemoryTotalMB = 12345, 2048
	r, err = nodeResources(cfg)
	must.NoError(t, err)
	must.EqOp(t, 12345, r.CPU)
	must.EqOp(t, 2048, r.MemoryMB)

	attrs := nodeAttributes(r)
	must.EqOp(t, runtime.GOARCH, attrs["cpu.arch"])
	must.EqOp(t, "linux", attrs["kernel.name"])
	must.EqOp(t, "12345", attrs["cpu.totalcompute"])
	must.EqOp(t, "2147483648", attrs["memory.totalbytes"])
	must.NotEq(t, "", attrs["kernel.version"])
}

// TestGroupUsers: the users of a group are its listed members and those
// whose primary group it is (daemon's own group holds daemon on Debian).
func TestGroupUsers(t *testing.T) {
	must.SliceContains(t, groupUsers([]string{"daemon"}), "daemon")
	must.SliceEmpty(t, groupUsers([]string{"no-such-group"}))
	must.SliceNotContains(t, groupUsers([]string{"docker", "disk", "adm", "shadow", "sudo"}), "nobody")
}
