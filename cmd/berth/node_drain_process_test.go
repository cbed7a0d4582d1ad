package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// sharedHostpathJob runs berth-hostpath on every client as the monolith
// plugin "hostpath", every instance on the same root and in no zone:
// the volumes are the same directories wherever they are mounted, as
// with a network filesystem (berth-hostpath's shared root: one lock,
// and each instance reads what another wrote). Controller publish is off:
// an instance publishes to its own node only.
func sharedHostpathJob(command, root string) string {
	return fmt.Sprintf(`
job "hostpath-plugin" {
  type = "system"
  group "plugin" {
    task "plugin" {
      driver = "exec"
      config {
        command = %q
        args    = ["-root", %q, "-node-id", "${BERTH_NODE_NAME}", "-disable-attach"]
      }
      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }
    }
  }
}
`, command, root)
}

// drainWriter seeds /data/seed on its first run and says what it found
// on every run, then appends to /data/log until it is stopped.
const drainWriter = `if [ -f /data/seed ]; then echo "found $(cat /data/seed)"; else echo "seed-$$" > /data/seed; echo "seeded $(cat /data/seed)"; fi; ` +
	`while :; do date +%s%N >> /data/log; sleep 0.2; done`

// TestProcess_NodeDrain drains the client running a writer and the
// hostpath plugin (three servers, two clients, the volume on a root both
// plugin instances share): the writer is stopped first and runs again on
// the other client with its data; its claim is released while the
// drained client's plugin still runs, which is stopped only after; no
// mount is left under the drained client's data dir. `node drain
// -monitor` prints each step. It measures the time from the drain to the
// writer running elsewhere.
func TestProcess_NodeDrain(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	sharedRoot := t.TempDir() // made before the clients: removed after them
	servers, _ := threeServers(t, bin)
	s := servers[0]
	clients := map[string]*clientProc{
		"c1": startWorkloadClient(t, bin, servers, "c1"),
		"c2": startWorkloadClient(t, bin, servers, "c2"),
	}
	readyNodes(t, bin, s, 2, 30*time.Second)
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", sharedHostpathJob(hostpath, sharedRoot)))
	waitUntil(t, 60*time.Second, "hostpath healthy on both nodes", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 2 && p.ControllersHealthy == 2
	})
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", "")))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "db.hcl", volumeJob("db", 1, "data", "single-node-writer", drainWriter)))
	first := running(jobAllocs(t, bin, s, "db"))
	must.SliceLen(t, 1, first)
	writer := first[0]
	ids := nodeIDsByName(t, bin, s)
	drainedName, otherName := "c1", "c2"
	if writer.NodeID == ids["c2"] {
		drainedName, otherName = "c2", "c1"
	}
	drained, other := ids[drainedName], ids[otherName]
	must.EqOp(t, drained, writer.NodeID)
	waitUntil(t, 30*time.Second, "the writer seeded its volume", func() bool {
		out, _, code := berthCLI(t, bin, s, "alloc", "logs", writer.ID, "t")
		return code == 0 && strings.Contains(out, "seeded seed-")
	})
	seeded, _, _ := berthCLI(t, bin, s, "alloc", "logs", writer.ID, "t")
	seed := strings.TrimPrefix(strings.TrimSpace(seeded), "seeded ")
	plugin := pluginAllocOn(t, bin, s, drained)

	// Drain, following it; meanwhile watch the plugin on the drained node.
	start := time.Now()
	monitor := exec.Command(bin, "node", "drain", "-enable", "-yes", "-deadline", "5m", "-monitor", drained)
	monitor.Env = append(os.Environ(), "BERTH_ADDR="+s.httpAddr())
	var monOut, monErr bytes.Buffer
	monitor.Stdout, monitor.Stderr = &monOut, &monErr
	must.NoError(t, monitor.Start())
	done := make(chan error, 1)
	var doneAt time.Time // written before done is sent, read after it is received
	go func() {
		err := monitor.Wait()
		doneAt = time.Now()
		done <- err
	}()

	var moved *structs.AllocListStub
	pluginStopSeen := false
	waitUntil(t, 120*time.Second, "the writer running on "+otherName+" and the drained node's plugin stopped", func() bool {
		if !pluginStopSeen && allocDesired(t, s, plugin) == structs.AllocDesiredStatusStop {
			pluginStopSeen = true
			vol := statusJSON(t, bin, s, "data")
			must.False(t, claimedBy(vol, writer.ID), must.Sprint("the plugin was stopped while the writer's claim on its node was not freed"))
		}
		if moved == nil {
			for _, a := range running(jobAllocs(t, bin, s, "db")) {
				if a.NodeID == other {
					moved = a
					t.Logf("figure: node drain -enable to the writer running on the other node: %s", time.Since(start).Round(time.Millisecond))
				}
			}
		}
		return moved != nil && pluginStopSeen
	})

	select {
	case err := <-done:
		must.NoError(t, err, must.Sprintf("node drain -monitor: %s\n%s", monOut.String(), monErr.String()))
	case <-time.After(120 * time.Second):
		_ = monitor.Process.Kill()
		t.Fatalf("node drain -monitor did not end:\n%s", monOut.String())
	}
	t.Logf("figure: node drain -enable to the drain complete (-monitor exits): %s", doneAt.Sub(start).Round(time.Millisecond))
	out := monOut.String()
	t.Logf("node drain -monitor:\n%s", out)
	last := -1
	for _, step := range []string{"drain started: deadline 5m0s", "stopping 1 allocation to move it off the node: db.g[0]",
		"no volume claim left on the node; stopping 1 allocation of CSI plugins: hostpath-plugin.plugin[",
		"drain complete: no allocation left to stop"} {
		i := strings.Index(out, step)
		must.Greater(t, last, i, must.Sprintf("step %q, in order, in:\n%s", step, out))
		last = i
	}
	must.StrHasSuffix(t, fmt.Sprintf("Node %q drain complete\n", drained), out)

	// The writer found its data on the other node.
	waitUntil(t, 30*time.Second, "the moved writer's first line", func() bool {
		logs, _, code := berthCLI(t, bin, s, "alloc", "logs", moved.ID, "t")
		return code == 0 && strings.Contains(logs, "found ")
	})
	logs, _, _ := berthCLI(t, bin, s, "alloc", "logs", moved.ID, "t")
	must.EqOp(t, "found "+seed, strings.TrimSpace(logs))

	// The plugin on the drained node stopped after the writer was gone,
	// and nothing is left mounted under the drained client's data dir.
	waitUntil(t, 60*time.Second, "the drained node's plugin over on its client", func() bool {
		a := allocJSON(t, s, plugin)
		return a.ClientStatus == structs.AllocClientStatusComplete || a.ClientStatus == structs.AllocClientStatusFailed
	})
	old := allocJSON(t, s, writer.ID)
	must.True(t, old.ClientStatus == structs.AllocClientStatusComplete || old.ClientStatus == structs.AllocClientStatusFailed,
		must.Sprintf("the old writer: %s", old.ClientStatus))
	// Left mounted: the plugin dir's own shared bind, which the client
	// keeps for the plugin's next task (exec.ShareDir), and the alloc
	// dirs' nosuid,nodev mount (exec.SecureAllocRoot); no volume.
	pluginDir := filepath.Join(clients[drainedName].dataDir, "client", "csi", "hostpath")
	allocRoot := filepath.Join(clients[drainedName].dataDir, "alloc")
	waitUntil(t, 30*time.Second, "no volume mounted under the drained client's data dir", func() bool {
		for _, mp := range mountsUnder(t, clients[drainedName].dataDir) {
			if mp != pluginDir && mp != allocRoot {
				return false
			}
		}
		return true
	})
	var node structs.Node
	getJSON(t, s.httpAddr()+"/v1/node/"+drained, &node)
	must.Nil(t, node.DrainStrategy)
	must.EqOp(t, structs.NodeSchedulingIneligible, node.SchedulingEligibility)
	waitUntil(t, 30*time.Second, "the plugin on the other node only", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 1 && p.Nodes[other] != nil && p.Nodes[drained] == nil
	})

	// Eligible again: the system job comes back to the node.
	timedCLI(t, bin, s, "node", "eligibility", "-enable", drained)
	waitUntil(t, 60*time.Second, "the plugin back on "+drainedName, func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 2
	})
}

// pluginAllocOn is the hostpath plugin's running allocation on nodeID.
func pluginAllocOn(t *testing.T, bin string, s *agentProc, nodeID string) string {
	t.Helper()
	for _, a := range running(jobAllocs(t, bin, s, "hostpath-plugin")) {
		if a.NodeID == nodeID {
			return a.ID
		}
	}
	t.Fatalf("no running plugin allocation on node %s", nodeID)
	return ""
}

func allocJSON(t *testing.T, s *agentProc, id string) *structs.Allocation {
	t.Helper()
	var a structs.Allocation
	getJSON(t, s.httpAddr()+"/v1/allocation/"+id, &a)
	return &a
}

func allocDesired(t *testing.T, s *agentProc, id string) string {
	t.Helper()
	return allocJSON(t, s, id).DesiredStatus
}
