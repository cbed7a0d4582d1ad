package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// splitPluginJob runs berth-hostpath (command) as two tasks of one node,
// the plugin id's controller and its node instance, sharing root (a
// hostpath root may be shared by instances); the node task is told to
// stage and publish under base.
func splitPluginJob(command, root, id, base string) string {
	task := func(typ, extra string) string {
		return fmt.Sprintf(`
  group %[1]q {
    task %[1]q {
      driver = "exec"
      config {
        command = %[2]q
        args    = ["-root", %[3]q, "-node-id", "${BERTH_NODE_NAME}", "-disable-attach"]
      }
      csi_plugin {
        id             = %[4]q
        type           = %[1]q
        mount_dir      = "/csi"
        health_timeout = "30s"%[5]s
      }
    }
  }`, typ, command, root, id, extra)
	}
	return `job "split-plugin" {
  type = "system"` + task("controller", "") +
		task("node", fmt.Sprintf("\n        stage_publish_base_dir = %q", base)) + "\n}\n"
}

// TestProcess_SplitPluginOneNode: a plugin's controller task and node task
// run side by side on one node (the client registers them apart, each on
// its own socket); the node reports both sides healthy, a volume is
// created through the controller and written through the node by a job,
// and the node instance was told paths under its stage_publish_base_dir.
func TestProcess_SplitPluginOneNode(t *testing.T) {
	testlog.NeedRoot(t, "plugin tasks mount with bidirectional propagation")
	bin, a := startDevAgent(t)
	root := t.TempDir()
	base := filepath.Join(t.TempDir(), "volumes-seen-by-the-plugin")
	job := writeSpec(t, "split.hcl", splitPluginJob(filepath.Join(filepath.Dir(bin), "berth-hostpath"), root, "split", base))
	out, errOut, code := berthCLI(t, bin, a, "job", "run", "-detach", job)
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))
	waitUntil(t, 60*time.Second, "both instances of plugin split healthy on the one node", func() bool {
		var p structs.CSIPlugin
		return fetchJSON(a.httpAddr()+"/v1/plugin/csi/split", &p) == nil && p.ControllersHealthy == 1 && p.NodesHealthy == 1
	})
	var nodes []*structs.NodeListStub
	getJSON(t, a.httpAddr()+"/v1/nodes", &nodes)
	must.Len(t, 1, nodes)
	var node structs.Node
	getJSON(t, a.httpAddr()+"/v1/node/"+nodes[0].ID, &node)
	must.NotNil(t, node.CSIControllerPlugins["split"], must.Sprint("the controller side"))
	must.NotNil(t, node.CSINodePlugins["split"], must.Sprint("the node side"))
	must.NotEq(t, node.CSIControllerPlugins["split"].AllocID, node.CSINodePlugins["split"].AllocID,
		must.Sprint("two tasks, two allocations"))

	vol := strings.Replace(volumeSpec("splitvol", ""), `plugin_id = "hostpath"`, `plugin_id = "split"`, 1)
	out, errOut, code = berthCLI(t, bin, a, "volume", "create", writeSpec(t, "splitvol.hcl", vol))
	must.Zero(t, code, must.Sprintf("volume create through the controller task: %s%s", out, errOut))
	writer := volumeJob("split-writer", 1, "splitvol", "single-node-writer",
		"echo through-the-split-plugin > /data/out; cat /data/out; exec sleep 3600")
	out, errOut, code = berthCLI(t, bin, a, "job", "run", "-detach", writeSpec(t, "writer.hcl", writer))
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))
	waitUntil(t, 60*time.Second, "the writer reads back what it wrote", func() bool {
		allocs := running(jobAllocs(t, bin, a, "split-writer"))
		if len(allocs) != 1 {
			return false
		}
		logs, _, _ := berthCLI(t, bin, a, "alloc", "logs", allocs[0].ID, "t")
		return strings.Contains(logs, "through-the-split-plugin")
	})
	state, err := os.ReadFile(filepath.Join(root, "state.json"))
	must.NoError(t, err)
	must.StrContains(t, string(state), `"target_path": "`+base+`/per-alloc/`, must.Sprint("the node task was told paths under stage_publish_base_dir"))
}
