package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// TestRunner_Resources_OOMKilled: a task with memory = 64 that takes 200
// MiB is killed by the kernel at its limit; its events say so (an OOM
// Killed event naming the limit, the Terminated and Restarting events
// giving it as the reason), and its cgroup is gone once it is.
func TestRunner_Resources_OOMKilled(t *testing.T) {
	needRoot(t)
	h := newHarness(t)
	task := shTask("hog", "echo started; head -c 200m /dev/zero | tail >/dev/null && echo survived")
	task.Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
	task.Restart = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail}
	alloc := testAlloc(structs.JobTypeService, task)
	r := h.runner(alloc)
	waitRunner(t, r)

	ts := r.Alloc().TaskStates["hog"]
	must.Eq(t, structs.AllocClientStatusFailed, r.Alloc().ClientStatus)
	oom := eventMessages(ts, EventOOMKilled)
	must.SliceNotEmpty(t, oom, must.Sprintf("events: %v", eventTypes(ts)))
	must.StrContains(t, oom[0], "ran out of memory: the kernel killed it at its limit of 64 MiB")
	must.StrContains(t, strings.Join(eventMessages(ts, EventTerminated), "\n"), "out of memory")
	must.StrContains(t, strings.Join(eventMessages(ts, EventRestarting), "\n"), "ran out of memory")
	must.StrContains(t, strings.Join(eventMessages(ts, EventNotRestarting), "\n"), "ran out of memory")
	must.StrNotContains(t, readLog(t, r, "hog", LogStdout), "survived")
	assertNoCgroup(t, alloc.ID+".hog.")
}

// TestRunner_Resources_Limits: a task's cgroup holds its limits: memory
// (memory_max when set, with memory as the soft limit) and its CPU
// weight; without memory_max, memory alone.
func TestRunner_Resources_Limits(t *testing.T) {
	needRoot(t)
	h := newHarness(t)
	task := shTask("db", "cat /proc/self/cgroup; echo ready; exec sleep 1000")
	task.Resources = &structs.Resources{CPU: 700, MemoryMB: 96, MemoryMaxMB: 128}
	alloc := testAlloc(structs.JobTypeService, task)
	r := h.runner(alloc)
	waitFor(t, func() bool { return strings.Contains(readLog(t, r, "db", LogStdout), "ready") })
	hs, ok := r.state.handle("db")
	must.True(t, ok)
	group := hs.Cgroup
	must.StrHasPrefix(t, filepath.Join(exec.CgroupParent, alloc.ID+".db."), group)
	must.StrContains(t, readLog(t, r, "db", LogStdout), group, must.Sprint("the task runs in its own cgroup"))
	for file, want := range cgroupFiles(group, 128<<20, 96<<20, 700) {
		b, err := os.ReadFile(file)
		must.NoError(t, err)
		must.EqOp(t, want, strings.TrimSpace(string(b)), must.Sprint(file))
	}
}

// cgroupFiles maps the files of a task's group that hold its limits to
// what they must say, on the hierarchy this node mounts.
func cgroupFiles(group string, max, low int64, shares int) map[string]string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // unified
		return map[string]string{
			filepath.Join("/sys/fs/cgroup", group, "memory.max"): itoa(max),
			filepath.Join("/sys/fs/cgroup", group, "memory.low"): itoa(low),
		}
	}
	return map[string]string{
		filepath.Join("/sys/fs/cgroup/memory", group, "memory.limit_in_bytes"):      itoa(max),
		filepath.Join("/sys/fs/cgroup/memory", group, "memory.soft_limit_in_bytes"): itoa(low),
		filepath.Join("/sys/fs/cgroup/cpu", group, "cpu.shares"):                    itoa(int64(shares)),
	}
}

// assertNoCgroup checks no task cgroup whose name starts with prefix is
// left, on any hierarchy.
func assertNoCgroup(t *testing.T, prefix string) {
	t.Helper()
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu"} {
		entries, err := os.ReadDir(filepath.Join(root, exec.CgroupParent))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		must.NoError(t, err)
		for _, e := range entries {
			must.False(t, strings.HasPrefix(e.Name(), prefix), must.Sprintf("cgroup %s left under %s", e.Name(), root))
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
