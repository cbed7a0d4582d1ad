package client

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestClient_RootTasks: the client reports its allow_root_tasks when it
// registers; where it is off, an alloc whose task would run as root
// (placed there all the same: the servers' check is not the only one)
// fails with the message that says what to set, and a task as nobody
// runs.
func TestClient_RootTasks(t *testing.T) {
	needRoot := func(t *testing.T) {
		t.Helper()
		testlog.NeedRoot(t, "tasks as another user")
	}
	for _, allow := range []bool{false, true} {
		name := map[bool]string{false: "forbidden", true: "allowed"}[allow]
		t.Run(name, func(t *testing.T) {
			needRoot(t)
			f := startFakeServers(t)
			c, _ := startClient(t, f, t.TempDir(), func(c *Config) {
				c.NodeName = "n1"
				c.AllowRootTasks = allow
			})
			waitUntil(t, "the node registers", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.node != nil
			})
			f.mu.Lock()
			must.Eq(t, allow, f.node.AllowRootTasks)
			f.mu.Unlock()

			root := watcherAlloc(c.NodeID(), structs.JobTypeBatch, "id -u")
			root.Job.TaskGroups[0].Tasks[0].User = "root"
			nobody := watcherAlloc(c.NodeID(), structs.JobTypeBatch, "id -u")
			f.set(root)
			f.set(nobody)
			waitUntil(t, "the nobody alloc completes", f.statusIs(nobody.ID, structs.AllocClientStatusComplete))
			if allow {
				waitUntil(t, "the root alloc completes", f.statusIs(root.ID, structs.AllocClientStatusComplete))
				return
			}
			waitUntil(t, "the root alloc fails", f.statusIs(root.ID, structs.AllocClientStatusFailed))
			must.Eq(t, `task "web" needs root (a csi_plugin task, or user = "root"); node "n1" does not allow root tasks: `+
				`set client { allow_root_tasks = true } in its agent config`, f.alloc(root.ID).ClientDescription)
		})
	}
}
