package exec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"

	"github.com/berth-csi/berth/structs"
)

func needRoot(t *testing.T) {
	t.Helper()
	testlog.NeedRoot(t, "mount namespaces and bind mounts")
}

// rootTaskConfig is taskConfig for a task that runs as root: one that
// mounts, or writes where only root may.
func rootTaskConfig(t *testing.T, script string) *TaskConfig {
	t.Helper()
	cfg := taskConfig(t, script)
	cfg.User, cfg.AllowRoot = "root", true
	return cfg
}

// hostMountsUnder lists this (the host's) namespace's mounts under dir.
func hostMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	mps, err := MountsUnder(dir)
	must.NoError(t, err)
	return mps
}

// sharedTmpfs mounts a tmpfs at dir in the test's (host) namespace and
// makes it shared, as a CSI publish target on a systemd host is.
func sharedTmpfs(t *testing.T, dir string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(dir, 0o755))
	must.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() {
		_, _ = DetachMountsUnder(dir, nil)
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	})
	must.NoError(t, syscall.Mount("", dir, "", syscall.MS_SHARED, ""))
}

func TestStart_Mounts_BindsVisibleToTaskOnly(t *testing.T) {
	needRoot(t)
	cfg := rootTaskConfig(t, "")
	root := filepath.Dir(cfg.TaskDir)
	vol := filepath.Join(t.TempDir(), "vol")
	must.NoError(t, os.MkdirAll(vol, 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(vol, "hello"), []byte("hello from the volume\n"), 0o644))
	abs := filepath.Join(root, "srv", "data") // absolute destination
	cfg.Mounts = []Mount{
		{Source: vol, Destination: abs},
		{Source: vol, Destination: "local/ro", ReadOnly: true, Propagation: structs.PropagationHostToTask},
	}
	cfg.Args = []string{"-c", `set -e
cat ` + abs + `/hello
cat local/ro/hello
echo written > ` + abs + `/by-task
if echo x > local/ro/nope 2>/dev/null; then echo ro-writable; else echo ro-refused; fi
echo ready
sleep 1000`}
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")
	must.Eq(t, "hello from the volume\nhello from the volume\nro-refused\nready\n", readFile(t, cfg.StdoutPath))
	must.Eq(t, "written\n", readFile(t, filepath.Join(vol, "by-task")), must.Sprint("the rw bind is the volume"))
	must.SliceEmpty(t, hostMountsUnder(t, root), must.Sprint("the binds live in the task's namespace only"))
	_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "ro", "hello"))
	must.ErrorIs(t, err, os.ErrNotExist, must.Sprint("the host sees the empty mount point"))

	must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 5*time.Second))
	must.SliceEmpty(t, hostMountsUnder(t, root))
}

func TestStart_Mounts_TaskMountsDoNotLeak(t *testing.T) {
	needRoot(t)
	cfg := rootTaskConfig(t, `mount -t tmpfs none local && echo mounted > local/f && echo ready && sleep 1000`)
	root := filepath.Dir(cfg.TaskDir)
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")
	must.SliceEmpty(t, hostMountsUnder(t, root))
	_, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "f"))
	must.ErrorIs(t, err, os.ErrNotExist)
	must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 5*time.Second))
}

// TestStart_Mounts_Propagation: the host mounts under the volume after the
// task started, then tells the task to look; the task mounts under its
// destination and the host looks.
func TestStart_Mounts_Propagation(t *testing.T) {
	needRoot(t)
	cases := []struct {
		mode          string
		hostToTask    bool // the task sees the host's later mount
		taskToHost    bool // the host sees the task's mount, while it runs
		detachOnExit  bool
		leftAfterStop bool
	}{
		{mode: structs.PropagationPrivate},
		{mode: structs.PropagationHostToTask, hostToTask: true},
		{mode: structs.PropagationBidirectional, hostToTask: true, taskToHost: true, detachOnExit: true},
		{mode: structs.PropagationBidirectional, hostToTask: true, taskToHost: true, leftAfterStop: true},
	}
	for _, tc := range cases {
		name := tc.mode
		if tc.taskToHost && !tc.detachOnExit {
			name += " kept"
		}
		t.Run(name, func(t *testing.T) {
			cfg := rootTaskConfig(t, `set -e
mkdir -p vol/by-task
mount -t tmpfs none vol/by-task
echo ready
while [ ! -e go ]; do sleep 0.02; done
if [ -e vol/by-host/f ]; then echo host-mount-visible; else echo host-mount-invisible; fi
echo looked
sleep 1000`)
			root := filepath.Dir(cfg.TaskDir)
			src := filepath.Join(t.TempDir(), "publish")
			sharedTmpfs(t, src)
			cfg.Mounts = []Mount{{Source: src, Destination: "vol", Propagation: tc.mode, DetachOnExit: tc.detachOnExit}}
			h := start(t, cfg)
			waitLog(t, cfg.StdoutPath, "ready")

			byHost := filepath.Join(src, "by-host")
			must.NoError(t, os.MkdirAll(byHost, 0o755))
			must.NoError(t, syscall.Mount("tmpfs", byHost, "tmpfs", 0, "size=1m"))
			must.NoError(t, os.WriteFile(filepath.Join(byHost, "f"), nil, 0o644))
			must.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "go"), nil, 0o644))
			waitLog(t, cfg.StdoutPath, "looked")
			want := "host-mount-invisible"
			if tc.hostToTask {
				want = "host-mount-visible"
			}
			must.StrContains(t, readFile(t, cfg.StdoutPath), want)

			seen := hostMountsUnder(t, src)
			if tc.taskToHost {
				must.Eq(t, []string{byHost, filepath.Join(src, "by-task")}, seen)
			} else {
				must.Eq(t, []string{byHost}, seen)
			}
			must.SliceEmpty(t, hostMountsUnder(t, root), must.Sprint("the bind itself never reaches the host"))

			must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 5*time.Second))
			must.NoError(t, h.CleanupError())
			after := hostMountsUnder(t, src)
			switch {
			case tc.leftAfterStop:
				must.SliceContains(t, after, filepath.Join(src, "by-task"))
			case tc.detachOnExit:
				// Everything that appeared under the volume while the task
				// ran goes, the host's mount too: on a volume's per-alloc
				// publish path only the alloc's tasks mount.
				must.SliceEmpty(t, after)
			default:
				must.Eq(t, []string{byHost}, after, must.Sprint("what the task mounted is gone; the host's mount stays"))
			}
			must.SliceEmpty(t, hostMountsUnder(t, root))
		})
	}
}

func TestStart_Mounts_BidirectionalNeedsMountPoint(t *testing.T) {
	needRoot(t)
	cfg := rootTaskConfig(t, "exit 0")
	cfg.Mounts = []Mount{{Source: t.TempDir(), Destination: "vol", Propagation: structs.PropagationBidirectional}}
	_, err := Start(context.Background(), cfg)
	must.ErrorContains(t, err, "bidirectional propagation needs "+cfg.Mounts[0].Source+" to be a mount point")
	must.SliceEmpty(t, hostMountsUnder(t, filepath.Dir(cfg.TaskDir)))
}

func TestStart_Mounts_ReadOnlyKeepsFlagsAndSubmounts(t *testing.T) {
	needRoot(t)
	cfg := rootTaskConfig(t, `set -e
for p in vol vol/sub; do if touch $p/x 2>/dev/null; then echo "$p writable"; else echo "$p read-only"; fi; done
grep " $BERTH_TASK_DIR/vol " /proc/self/mountinfo | grep -q nosuid && echo nosuid-kept`)
	src := filepath.Join(t.TempDir(), "src")
	must.NoError(t, os.MkdirAll(src, 0o755))
	must.NoError(t, syscall.Mount("tmpfs", src, "tmpfs", syscall.MS_NOSUID, "size=1m"))
	t.Cleanup(func() {
		_, _ = DetachMountsUnder(src, nil)
		_ = syscall.Unmount(src, syscall.MNT_DETACH)
	})
	must.NoError(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	must.NoError(t, syscall.Mount("tmpfs", filepath.Join(src, "sub"), "tmpfs", 0, "size=1m"))
	cfg.Mounts = []Mount{{Source: src, Destination: "vol", ReadOnly: true}}
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
	must.Eq(t, "vol read-only\nvol/sub read-only\nnosuid-kept\n", readFile(t, cfg.StdoutPath))
	out := strings.TrimSpace(readFile(t, cfg.StderrPath))
	must.Eq(t, "", out)
}

// TestStart_Mounts_PlantedLinkRefused: a task that left a link in its task
// dir where its next start mounts a volume (a relative destination) gets
// a refused start: nothing is mounted or made through the link, and the
// error names it.
func TestStart_Mounts_PlantedLinkRefused(t *testing.T) {
	needRoot(t)
	host := t.TempDir() // what the link points at: the host's
	vol := t.TempDir()
	for _, tc := range []struct{ name, dest string }{
		{"link at the destination", "local/data"},
		{"link above it", "local/data/sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, "echo ran")
			must.NoError(t, os.Symlink(host, filepath.Join(cfg.TaskDir, "local", "data")))
			cfg.Mounts = []Mount{{Source: vol, Destination: tc.dest}}
			_, err := Start(context.Background(), cfg)
			must.Error(t, err)
			must.StrContains(t, err.Error(), filepath.Join(cfg.TaskDir, "local", "data"))
			must.StrContains(t, err.Error(), "symbolic link")
			entries, err := os.ReadDir(host)
			must.NoError(t, err)
			must.SliceEmpty(t, entries, must.Sprint("nothing was made through the link"))
			must.SliceEmpty(t, hostMountsUnder(t, host))
			must.Eq(t, "", readFile(t, cfg.StdoutPath), must.Sprint("the command did not run"))
		})
	}
}
