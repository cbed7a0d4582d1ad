package exec

import (
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/shoenig/test/must"
)

// groupDir is where a group's memory controller dir is.
func groupDir(group string) string {
	if cgroups.Mode() == cgroups.Unified {
		return filepath.Join(cgroupMount, group)
	}
	return filepath.Join(cgroupMount, "memory", group)
}

// TestSweepCgroups: an empty task group of an alloc nothing here runs,
// older than the age given, is removed; one of a kept alloc, a new one,
// and one a process is in stay.
func TestSweepCgroups(t *testing.T) {
	needRoot(t)
	limits := &Limits{CPUShares: 100, MemoryBytes: 64 << 20}
	make := func(alloc string) string {
		group := path.Join(CgroupParent, cgroupName(alloc, "web", time.Now()))
		g, err := newTaskCgroup(group, limits)
		must.NoError(t, err)
		t.Cleanup(func() { _ = removeWhenEmpty(g) })
		return group
	}
	old := func(group string) {
		past := time.Now().Add(-time.Hour)
		must.NoError(t, os.Chtimes(groupDir(group), past, past))
	}
	stray, kept, fresh, busy := make("stray-alloc"), make("kept-alloc"), make("fresh-alloc"), make("busy-alloc")
	old(stray)
	old(kept)
	old(busy)
	cmd := osexec.Command("sleep", "60")
	must.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	g, err := loadTaskCgroup(busy)
	must.NoError(t, err)
	must.NoError(t, g.add(cmd.Process.Pid))

	removed := SweepCgroups(func(alloc string) bool { return alloc == "kept-alloc" }, time.Minute)
	must.SliceContains(t, removed, stray)
	for _, group := range []string{kept, fresh, busy} {
		_, err := os.Stat(groupDir(group))
		must.NoError(t, err, must.Sprintf("%s was removed", group))
	}
	_, err = os.Stat(groupDir(stray))
	must.ErrorIs(t, err, os.ErrNotExist)
}

// TestSecureAllocRoot: the alloc root becomes a nosuid, nodev mount of
// its own (again, idempotently), and goes with ReleaseAllocRoot, its
// contents kept.
func TestSecureAllocRoot(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "alloc")
	t.Cleanup(func() { _ = ReleaseAllocRoot(dir) })
	for i := 0; i < 2; i++ {
		must.NoError(t, SecureAllocRoot(dir))
	}
	must.NoError(t, os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o644))
	var st syscall.Statfs_t
	must.NoError(t, syscall.Statfs(dir, &st))
	must.EqOp(t, int64(0x2|0x4), st.Flags&(0x2|0x4), must.Sprint("ST_NOSUID and ST_NODEV")) // statvfs(3)
	mps, err := MountsUnder(filepath.Dir(dir))
	must.NoError(t, err)
	must.Eq(t, []string{dir}, mps, must.Sprint("one mount, however often it is made"))
	must.NoError(t, ReleaseAllocRoot(dir))
	mps, err = MountsUnder(filepath.Dir(dir))
	must.NoError(t, err)
	must.SliceEmpty(t, mps)
	_, err = os.Stat(filepath.Join(dir, "kept"))
	must.NoError(t, err)
}
