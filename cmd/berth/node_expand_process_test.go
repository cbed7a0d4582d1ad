package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestProcess_NodeExpansion grows volumes with `berth volume create` and a
// larger capacity_min on three server processes and a client process
// running berth-hostpath as a plugin task (mount_dir /csi), whose
// controller asks for node expansion: a volume a running writer has
// published is expanded on its node at once (NodeExpandVolume with the
// paths as the plugin task sees them), and one no node has is expanded by
// its next publish; `berth volume status` shows the new capacity, and
// nothing is left pending.
func TestProcess_NodeExpansion(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot := t.TempDir() // made before the client: removed after it
	servers, _ := threeServers(t, bin)
	s := servers[1]
	c1 := startWorkloadClient(t, bin, servers, "c1")
	readyNodes(t, bin, s, 1, 30*time.Second)
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath")))
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})
	nodeExpansions := func() int { return strings.Count(c1.log.String(), "volume expanded on the node") }

	// Online: a writer has the volume published; the create that grows it
	// has the writer's node expand it before it answers.
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", `capacity_min = "1MiB"`)))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "writer.hcl", volumeJob("writer", 1, "data", "single-node-writer",
		`echo before > /data/out.txt; exec sleep 1000`)))
	writer := running(jobAllocs(t, bin, s, "writer"))
	must.SliceLen(t, 1, writer)
	must.Zero(t, nodeExpansions())

	start := time.Now()
	out := timedCLI(t, bin, servers[2], "volume", "create", writeSpec(t, "bigger.hcl", volumeSpec("data", `capacity_min = "4MiB"`)))
	t.Logf("figure: online expansion (controller and node expand, capacity recorded): %s", time.Since(start).Round(time.Millisecond))
	must.StrContains(t, out, "capacity 4.0 MiB")
	vol := statusJSON(t, bin, servers[0], "data")
	must.Eq(t, int64(4<<20), vol.Capacity)
	must.Nil(t, vol.NodeExpansion)
	waitUntil(t, 5*time.Second, "the client's log of the expansion", func() bool { return nodeExpansions() == 1 })
	must.StrContains(t, c1.log.String(), "volume_path=/csi/per-alloc/"+writer[0].ID+"/data staging_path=/csi/staging/data capacity_bytes=4194304",
		must.Sprint("the paths as the plugin task sees them"))
	must.SliceLen(t, 1, running(jobAllocs(t, bin, s, "writer")), must.Sprint("the writer kept running"))
	out, _, _ = berthCLI(t, bin, s, "volume", "status", "data")
	must.StrContains(t, out, "4.0 MiB")

	// Offline: no node has the volume. It takes the controller's capacity
	// at once, pending node expansion; the next publish does it before
	// the reader starts.
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "idle.hcl", volumeSpec("idle", `capacity_min = "1MiB"`)))
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "idle-bigger.hcl", volumeSpec("idle", `capacity_min = "2MiB"`)))
	idle := statusJSON(t, bin, s, "idle")
	must.Eq(t, int64(2<<20), idle.Capacity)
	must.Eq(t, &structs.CSIVolumeNodeExpansion{CapacityMin: 2 << 20, Capacity: 2 << 20}, idle.NodeExpansion)
	must.Eq(t, 1, nodeExpansions(), must.Sprint("no node to ask"))

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "reader.hcl", volumeJob("reader", 1, "idle", "single-node-writer", `exec sleep 1000`)))
	reader := running(jobAllocs(t, bin, s, "reader"))
	must.SliceLen(t, 1, reader)
	waitUntil(t, 10*time.Second, "the pending node expansion done", func() bool { return statusJSON(t, bin, s, "idle").NodeExpansion == nil })
	must.Eq(t, int64(2<<20), statusJSON(t, bin, s, "idle").Capacity)
	waitUntil(t, 5*time.Second, "the client's log of the expansion", func() bool { return nodeExpansions() == 2 })
	must.StrContains(t, c1.log.String(), "volume_path=/csi/per-alloc/"+reader[0].ID+"/idle staging_path=/csi/staging/idle capacity_bytes=2097152")
}
