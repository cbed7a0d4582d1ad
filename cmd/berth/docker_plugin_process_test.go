package main_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/structs"
)

// dockerPluginClientHCL lets a client's docker tasks run privileged and
// add sys_admin, as a containerized plugin needs.
const dockerPluginClientHCL = `
driver "docker" {
  allow_privileged = true
  allow_caps       = ["sys_admin"]
}
`

// dockerPluginJob is berth-hostpath's image run as a system job of docker
// tasks: privileged, or with cap_add = ["sys_admin"] (what it needs to
// mount) where the engine cannot run privileged containers. Its volumes
// live in its task dir, which outlives a container restart.
func dockerPluginJob(image string, privileged bool) string {
	grant := `privileged = true`
	if !privileged {
		grant = `cap_add    = ["sys_admin"]`
	}
	return fmt.Sprintf(`
job "hostpath-plugin" {
  type = "system"
  group "plugin" {
    task "plugin" {
      driver = "docker"
      config {
        image      = %q
        args       = ["-root", "/berth/local/volumes", "-node-id", "${BERTH_NODE_NAME}", "-topology", "zone=${BERTH_NODE_NAME}"]
        %s
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
`, image, grant)
}

// TestProcess_DockerPlugin: berth-hostpath shipped as an image runs as a
// docker system job on two clients; a volume is created through it; a
// container writes to the volume, its client agent is restarted under
// the running plugin and writer containers (they run on, every mount
// stays), the job stops (the containerized plugin unpublishes and
// unstages: the claim is freed and the mounts go), and a second container
// on the same node reads the data. Then a block volume, attached as a
// loop device by the containerized plugin through the host's /dev, is
// written and read back by a container.
func TestProcess_DockerPlugin(t *testing.T) {
	cli := dockertest.Client(t) // skips, saying why, without root or an engine
	plugin := dockertest.Image(t, cli, "berth-hostpath", dockertest.StaticBinary(t, "../berth-hostpath"))
	db := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "../../client/drivers/docker/testdata/berthdb"))
	privileged, why := dockertest.CanRunPrivileged(t, cli, plugin, "-version")
	if !privileged {
		t.Logf("the plugin runs with cap_add = [\"sys_admin\"]: this engine cannot run privileged containers: %s", why)
	}
	bin := buildBerth(t)
	servers, _ := threeServers(t, bin)
	s := servers[0]
	clients := map[string]*clientProc{}
	for _, name := range []string{"c1", "c2"} {
		c := startWorkloadClientWith(t, bin, servers, name, "127.0.0.1", dockerPluginClientHCL)
		t.Cleanup(func() { removeContainersUnder(t, cli, c.dataDir) }) // before the client's cleanup unmounts
		clients[name] = c
	}
	readyNodes(t, bin, s, 2, 30*time.Second)
	names := map[string]string{}
	for name, id := range nodeIDsByName(t, bin, s) {
		names[id] = name
	}

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", dockerPluginJob(plugin, privileged)))
	waitUntil(t, 60*time.Second, "the containerized hostpath healthy on both nodes", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 2 && p.ControllersHealthy == 2
	})
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", "")))

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "writer.hcl", dockerVolumeJob("writer", db, "data",
		"write:/data/out.txt:written through a containerized plugin", "trap", "block")))
	writer := running(jobAllocs(t, bin, s, "writer"))
	must.SliceLen(t, 1, writer)
	c := clients[names[writer[0].NodeID]]
	waitUntil(t, 10*time.Second, "the writer's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", writer[0].ID, "t")
		return out == "read /data/out.txt: written through a containerized plugin\n"
	})
	mounted := mountsUnder(t, c.dataDir)
	must.True(t, containsPart(mounted, writer[0].ID), must.Sprintf("the writer's volume is published under its client: %v", mounted))
	pluginAllocs := allocIDs(running(jobAllocs(t, bin, s, "hostpath-plugin")))
	must.SliceLen(t, 2, pluginAllocs)

	// The writer's client agent restarts under both containers.
	c.signal(syscall.SIGTERM)
	logged := len(c.log.String())
	c.start()
	waitUntil(t, 30*time.Second, "the restarted client reattached to both containers", func() bool {
		return strings.Count(c.log.String()[logged:], `process="container `) >= 2
	})
	must.Eq(t, mounted, mountsUnder(t, c.dataDir), must.Sprint("the restart unmounted nothing"))
	waitUntil(t, 30*time.Second, "the plugin healthy again on both nodes", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 2
	})
	must.Eq(t, pluginAllocs, allocIDs(running(jobAllocs(t, bin, s, "hostpath-plugin"))), must.Sprint("the plugin allocations ran on"))

	timedCLI(t, bin, s, "job", "stop", "writer")
	waitUntil(t, 30*time.Second, "the writer's claim freed", func() bool { return !claimedBy(statusJSON(t, bin, s, "data"), writer[0].ID) })
	must.False(t, containsPart(mountsUnder(t, c.dataDir), writer[0].ID), must.Sprint("the containerized plugin unpublished and unstaged"))

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "reader.hcl", dockerVolumeJob("reader", db, "data",
		"write:/data/out.txt:and read by another", "trap", "block")))
	reader := running(jobAllocs(t, bin, s, "reader"))
	must.SliceLen(t, 1, reader)
	must.EqOp(t, writer[0].NodeID, reader[0].NodeID, must.Sprint("the volume's topology keeps it on its node"))
	waitUntil(t, 10*time.Second, "the reader's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", reader[0].ID, "t")
		return out == "read /data/out.txt: written through a containerized plugin\nand read by another\n"
	})
	timedCLI(t, bin, s, "job", "stop", "reader")
	waitUntil(t, 30*time.Second, "the volume free", func() bool { return !statusJSON(t, bin, s, "data").InUse() })
	timedCLI(t, bin, s, "volume", "delete", "data")

	// A block volume through the containerized plugin: it attaches a loop
	// device through the host's /dev it was given (no privilege), and a
	// container writes the device and reads it back.
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "disk.hcl", blockVolumeSpec))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "block.hcl", blockJob("block-writer", "docker", "/dev/berthdisk",
		fmt.Sprintf("        image = %q\n        args  = [\"pwrite:/dev/berthdisk:4096:through-the-container\", \"pread:/dev/berthdisk:4096:21\", \"block\"]", db))))
	blockWriter := running(jobAllocs(t, bin, s, "block-writer"))
	must.SliceLen(t, 1, blockWriter)
	waitUntil(t, 30*time.Second, "the block writer's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", blockWriter[0].ID, "t")
		return out == "pwrite /dev/berthdisk: ok\npread /dev/berthdisk: through-the-container\n"
	})
	timedCLI(t, bin, s, "job", "stop", "block-writer")
	waitUntil(t, 30*time.Second, "the block volume free", func() bool { return !statusJSON(t, bin, s, "disk").InUse() })
	timedCLI(t, bin, s, "volume", "delete", "disk")
	timedCLI(t, bin, s, "job", "stop", "hostpath-plugin")
	waitUntil(t, 30*time.Second, "the plugin's containers gone", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p == nil || p.NodesHealthy == 0
	})
}

// allocIDs are the allocations' IDs, sorted.
func allocIDs(allocs []*structs.AllocListStub) []string {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = a.ID
	}
	slices.Sort(ids)
	return ids
}

// containsPart reports whether a path in paths has part in it.
func containsPart(paths []string, part string) bool {
	for _, p := range paths {
		if strings.Contains(p, part) {
			return true
		}
	}
	return false
}
