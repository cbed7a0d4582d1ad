package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestCPUList(t *testing.T) {
	must.EqOp(t, "", CPUList(nil))
	must.EqOp(t, "3", CPUList([]int{3}))
	must.EqOp(t, "0-2,5,7-8", CPUList([]int{0, 1, 2, 5, 7, 8}))
}

// TestCores: a task takes the lowest free cores, the shared set loses
// them and the watchers hear of it, in order; too many is refused saying
// how many are free; released cores return; a reservation is never
// handed out.
func TestCores(t *testing.T) {
	c := NewCores([]int{3, 0, 1, 2}, 1) // core 0 kept for the node
	must.EqOp(t, "1-3", c.Shared())
	var mu sync.Mutex
	var heard []string
	cancel := c.Watch(func(s string) {
		mu.Lock()
		heard = append(heard, s)
		mu.Unlock()
	})
	got, err := c.Take("a/db", 2)
	must.NoError(t, err)
	must.Eq(t, []int{1, 2}, got)
	again, err := c.Take("a/db", 2)
	must.NoError(t, err)
	must.Eq(t, got, again, must.Sprint("a restart keeps its cores"))
	must.EqOp(t, "3", c.Shared())
	_, err = c.Take("b/db", 2)
	must.ErrorContains(t, err, "the node has 1 cores free of the 3 it offers, and the task asks for 2")
	_, err = c.Take("b/db", 1)
	must.NoError(t, err)
	must.EqOp(t, "1-3", c.Shared(), must.Sprint("every core taken: shared tasks run on all of them"))
	c.Release("a/db")
	must.EqOp(t, "1-2", c.Shared())
	c.Claim("a/db", []int{2, 0, 9})
	must.EqOp(t, "1", c.Shared(), must.Sprint("a restored task's cores, not the reserved or unknown ones"))
	cancel()
	c.Release("a/db")
	mu.Lock()
	defer mu.Unlock()
	must.Eq(t, []string{"1-3", "3", "1-3", "1-2", "1"}, heard, must.Sprint("the set when watched, then each change once, in order; none after cancel"))
}

// TestRunner_Cores: a task with cores = 1 runs on a core of its own, and a
// running shared task is moved off it, and back once the first is gone.
func TestRunner_Cores(t *testing.T) {
	needRoot(t)
	h := newHarness(t)
	cores := NewCores([]int{0, 1}, 0)
	h.cores = cores
	shared := shTask("web", "echo ready; exec sleep 1000")
	own := shTask("db", "echo ready; exec sleep 1000")
	own.Resources = &structs.Resources{Cores: 1, MemoryMB: 32}
	webAlloc := testAlloc(structs.JobTypeService, shared)
	web := h.runner(webAlloc)
	waitFor(t, func() bool { return readLog(t, web, "web", LogStdout) == "ready\n" })
	waitFor(t, func() bool { return cpusetOf(t, web, "web") == "0-1" })

	dbAlloc := testAlloc(structs.JobTypeService, own)
	db := h.runner(dbAlloc)
	waitFor(t, func() bool { return readLog(t, db, "db", LogStdout) == "ready\n" })
	waitFor(t, func() bool { return cpusetOf(t, db, "db") == "0" })
	waitFor(t, func() bool { return cpusetOf(t, web, "web") == "1" })

	stop := dbAlloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	db.Update(stop)
	waitRunner(t, db)
	waitFor(t, func() bool { return cpusetOf(t, web, "web") == "0-1" })
}

// cpusetOf reads a running task's cpuset from its cgroup, "" before its
// handle is recorded (just after its start).
func cpusetOf(t *testing.T, r *Runner, task string) string {
	t.Helper()
	hs, ok := r.state.handle(task)
	if !ok {
		return ""
	}
	for _, dir := range []string{"/sys/fs/cgroup/cpuset", "/sys/fs/cgroup"} {
		if b, err := os.ReadFile(filepath.Join(dir, hs.Cgroup, "cpuset.cpus")); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no cpuset.cpus for %s", hs.Cgroup)
	return ""
}
