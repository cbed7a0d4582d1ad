package allocrunner

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// TestRunner_Restore_PlantedEntry: a task running as nobody replaces its
// local/ dir (which it owns) with a link to a host dir, or with a file;
// the client restarts twice. Each restored runner refuses the entry
// without following it: the host dir keeps its owner and mode, nothing is
// made in it, the reattached task is killed, and the alloc fails with an
// event that names the entry.
func TestRunner_Restore_PlantedEntry(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name, plant, found string
	}{
		{"link to a host dir", "ln -s %s local", "a symbolic link is there"},
		{"file", "echo not a dir > local", "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			host := filepath.Join(openTempDir(t), "usr-local-bin")
			must.NoError(t, os.Mkdir(host, 0o755))
			plant := strings.ReplaceAll(tc.plant, "%s", host)
			alloc := testAlloc(structs.JobTypeService, shTask("web", "rm -rf local && "+plant+" && echo planted; exec sleep 1000"))
			r := h.runner(alloc)
			waitFor(t, func() bool { return readLog(t, r, "web", LogStdout) == "planted\n" })

			for restart := 1; restart <= 2; restart++ {
				hs, running := r.state.handle("web")
				r.Shutdown()
				restored := alloc.Copy()
				restored.ClientStatus = r.Alloc().ClientStatus
				restored.TaskStates = r.Alloc().TaskStates
				r = h.runner(restored)
				waitRunner(t, r)

				view := r.Alloc()
				must.Eq(t, structs.AllocClientStatusFailed, view.ClientStatus, must.Sprintf("restart %d", restart))
				entry := filepath.Join(AllocDir(h.dataDir, alloc.ID), "web", "local")
				must.StrContains(t, view.ClientDescription, entry)
				must.StrContains(t, view.ClientDescription, tc.found)
				must.SliceContains(t, eventMessages(view.TaskStates["web"], EventSetupFailure), view.ClientDescription)
				if running {
					must.False(t, exec.ProcessAlive(hs.HandleState), must.Sprint("the task that planted it is killed"))
				}

				fi, err := os.Stat(host)
				must.NoError(t, err)
				st := fi.Sys().(*syscall.Stat_t)
				must.EqOp(t, uint32(0), st.Uid, must.Sprintf("restart %d: the host dir's owner changed", restart))
				must.EqOp(t, uint32(0), st.Gid)
				must.EqOp(t, os.FileMode(0o755), fi.Mode().Perm())
				entries, err := os.ReadDir(host)
				must.NoError(t, err)
				must.SliceEmpty(t, entries, must.Sprint("nothing was made through the link"))
			}
		})
	}
}
