package allocrunner

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestRunner_User_Refused: a task that needs root on a client that does
// not allow it, or whose user this node does not have, fails the alloc
// before anything starts, with a message naming the task and what to do.
func TestRunner_User_Refused(t *testing.T) {
	needRoot(t)
	cases := []struct {
		name string
		edit func(*structs.Task)
		want func(allocID string) string
	}{
		{"user root", func(t *structs.Task) { t.User = "root" }, func(string) string {
			return structs.RootTaskRefusal("web", "node-1")
		}},
		{"uid 0", func(t *structs.Task) { t.User = "0" }, func(string) string { return structs.RootTaskRefusal("web", "node-1") }},
		{"plugin task", func(t *structs.Task) {
			t.CSIPluginConfig = &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, MountDir: "/csi"}
		}, func(string) string { return structs.RootTaskRefusal("web", "node-1") }},
		{"unknown user", func(t *structs.Task) { t.User = "no-such-user" }, func(id string) string {
			return fmt.Sprintf(`task "web" of alloc %s: user "no-such-user" does not exist on node "node-1"; create it there, `+
				`or set the task's user to one that exists (the default is "nobody")`, id)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.allowRoot = false
			h.plugins = dynamicplugins.New(testlog.Logger(t, "registry"))
			task := shTask("web", "echo ran")
			tc.edit(task)
			alloc := testAlloc(structs.JobTypeBatch, task)
			r := h.runner(alloc)
			waitRunner(t, r)
			view := r.Alloc()
			must.Eq(t, structs.AllocClientStatusFailed, view.ClientStatus)
			must.Eq(t, tc.want(alloc.ID), view.ClientDescription)
			ts := view.TaskStates["web"]
			must.True(t, ts.Failed)
			must.SliceContains(t, eventMessages(ts, EventSetupFailure), tc.want(alloc.ID))
			must.SliceNotContains(t, eventTypes(ts), EventStarted)
			must.Eq(t, "", readLog(t, r, "web", LogStdout), must.Sprint("nothing ran"))
		})
	}
	t.Run("root allowed", func(t *testing.T) {
		h := newHarness(t)
		task := shTask("web", "id -u")
		task.User = "root"
		r := h.runner(testAlloc(structs.JobTypeBatch, task))
		waitRunner(t, r)
		must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus)
		must.Eq(t, "0\n", readLog(t, r, "web", LogStdout))
	})
}

// TestRunner_User_Dirs: tasks run as nobody unless they say otherwise and
// write into their own dirs and the alloc's shared data/ and tmp/; the
// data dir (t.TempDir: 0700) becomes searchable by them, the alloc root
// 0711. Tasks of two users share data/ and tmp/ as 1777.
func TestRunner_User_Dirs(t *testing.T) {
	needRoot(t)
	nobody, err := user.Lookup("nobody")
	must.NoError(t, err)
	daemon, err := user.Lookup("daemon")
	must.NoError(t, err)
	script := `id -u; echo x > local/f; echo x > ../alloc/data/$BERTH_TASK_NAME; echo x > ../alloc/tmp/$BERTH_TASK_NAME; ` +
		`ls "$BERTH_TASK_DIR" >/dev/null && echo reached`

	t.Run("one user", func(t *testing.T) {
		h := newHarness(t)
		h.dataDir = openTempDir(t) // its parent searchable: the test's
		must.NoError(t, os.Chmod(h.dataDir, 0o700))
		r := h.runner(testAlloc(structs.JobTypeBatch, shTask("web", script)))
		waitRunner(t, r)
		must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus, must.Sprintf("%+v", r.Alloc()))
		must.Eq(t, nobody.Uid+"\nreached\n", readLog(t, r, "web", LogStdout), must.Sprintf("stderr: %s", readLog(t, r, "web", LogStderr)))
		for _, p := range []string{TaskDir(r.allocDir, "web"), filepath.Join(TaskDir(r.allocDir, "web"), "local", "f"),
			filepath.Join(SharedDir(r.allocDir), "data"), filepath.Join(SharedDir(r.allocDir), "data", "web")} {
			must.Eq(t, nobody.Uid, owner(t, p), must.Sprint(p))
		}
		must.Eq(t, "0", owner(t, LogPath(r.allocDir, "web", LogStdout)), must.Sprint("berth writes the logs"))
		must.Eq(t, os.FileMode(0o711), mode(t, h.dataDir), must.Sprint("searchable, not listable"))
		must.Eq(t, os.FileMode(0o711), mode(t, filepath.Join(h.dataDir, "alloc")))
	})
	t.Run("two users", func(t *testing.T) {
		h := newHarness(t)
		h.dataDir = openTempDir(t)
		other := shTask("other", script)
		other.User = "daemon"
		r := h.runner(testAlloc(structs.JobTypeBatch, shTask("web", script), other))
		waitRunner(t, r)
		must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus, must.Sprintf("%+v", r.Alloc()))
		must.Eq(t, daemon.Uid+"\nreached\n", readLog(t, r, "other", LogStdout))
		must.Eq(t, daemon.Uid, owner(t, TaskDir(r.allocDir, "other")))
		for _, d := range []string{"data", "tmp"} {
			fi, err := os.Stat(filepath.Join(SharedDir(r.allocDir), d))
			must.NoError(t, err)
			must.Eq(t, os.ModeSticky|0o777, fi.Mode()&(os.ModeSticky|os.ModePerm))
		}
	})
}

func owner(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	must.NoError(t, err)
	return fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid)
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	must.NoError(t, err)
	return fi.Mode().Perm()
}
