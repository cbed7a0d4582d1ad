package main_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/structs"
)

// dockerVolumeJob is a service job of one docker task running image with
// args (client/drivers/docker/testdata/berthdb steps), with volume
// mounted at /data.
func dockerVolumeJob(id, image, volume string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`
job %q {
  type = "service"
  group "g" {
    volume "data" {
      type            = "csi"
      source          = %q
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "docker"
      config {
        image = %q
        args  = [%s]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`, id, volume, image, strings.Join(quoted, ", "))
}

// TestProcess_DockerWorkload: on three server processes and a client
// process running berth-hostpath (exec, as a system job), a container
// writes to a CSI volume; the client agent restarted under it leaves the
// container running and the volume mounted; the job's stop frees the
// claim and removes the container; a second container on the same node
// reads what the first wrote.
func TestProcess_DockerWorkload(t *testing.T) {
	cli := dockertest.Client(t) // skips, saying why, without root or an engine
	image := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "../../client/drivers/docker/testdata/berthdb"))
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot := t.TempDir()
	servers, _ := threeServers(t, bin)
	s := servers[0]
	c1 := startWorkloadClient(t, bin, servers, "c1")
	t.Cleanup(func() { removeContainersUnder(t, cli, c1.dataDir) }) // before the client's cleanup unmounts
	readyNodes(t, bin, s, 1, 30*time.Second)
	c1ID := nodeIDsByName(t, bin, s)["c1"]
	waitUntil(t, 30*time.Second, "c1's docker driver healthy", func() bool {
		var n *structs.Node
		getJSON(t, s.httpAddr()+"/v1/node/"+c1ID, &n)
		return n != nil && n.Drivers[structs.DriverDocker] != nil && n.Drivers[structs.DriverDocker].Healthy
	})

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath")))
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 1
	})
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", "")))

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "writer.hcl", dockerVolumeJob("writer", image, "data",
		"write:/data/out.txt:written by a container", "trap", "block")))
	writer := running(jobAllocs(t, bin, s, "writer"))
	must.SliceLen(t, 1, writer)
	waitUntil(t, 10*time.Second, "the writer's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", writer[0].ID, "t")
		return out == "read /data/out.txt: written by a container\n"
	})
	containers := func() []container.Summary {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", docker.LabelAllocID+"="+writer[0].ID))})
		must.NoError(t, err)
		return list
	}
	before := containers()
	must.SliceLen(t, 1, before)
	mounted := mountsUnder(t, c1.dataDir)

	// The client agent restarts: the container runs on, nothing is
	// unmounted, and the new agent reattaches.
	c1.signal(syscall.SIGTERM)
	logged := len(c1.log.String())
	c1.start()
	waitUntil(t, 30*time.Second, "the restarted c1 reattached to the container", func() bool {
		return strings.Contains(c1.log.String()[logged:], "process=\"container "+before[0].ID[:12])
	})
	after := containers()
	must.SliceLen(t, 1, after)
	must.EqOp(t, before[0].ID, after[0].ID, must.Sprint("the same container, not a new one"))
	must.EqOp(t, "running", after[0].State)
	must.Eq(t, mounted, mountsUnder(t, c1.dataDir), must.Sprint("the restart unmounted nothing"))

	timedCLI(t, bin, s, "job", "stop", "writer")
	waitUntil(t, 30*time.Second, "the writer's claim freed", func() bool { return !claimedBy(statusJSON(t, bin, s, "data"), writer[0].ID) })
	waitUntil(t, 10*time.Second, "the writer's container removed", func() bool { return len(containers()) == 0 })

	timedCLI(t, bin, s, "job", "run", writeSpec(t, "reader.hcl", dockerVolumeJob("reader", image, "data",
		"write:/data/out.txt:and read by another", "trap", "block")))
	reader := running(jobAllocs(t, bin, s, "reader"))
	must.SliceLen(t, 1, reader)
	waitUntil(t, 10*time.Second, "the reader's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", reader[0].ID, "t")
		return out == "read /data/out.txt: written by a container\nand read by another\n"
	})
	timedCLI(t, bin, s, "job", "stop", "reader")
	waitUntil(t, 30*time.Second, "the volume free", func() bool { return !statusJSON(t, bin, s, "data").InUse() })
}

// removeContainersUnder force-removes the containers of the tasks of the
// client whose data dir is dataDir (their logs are under it), so that a
// failed test leaves none running with the volume bound.
func removeContainersUnder(t *testing.T, cli *client.Client, dataDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelAllocID))})
	if err != nil {
		t.Logf("list containers: %v", err)
		return
	}
	for _, c := range list {
		if strings.HasPrefix(c.Labels[docker.LabelStdoutPath], dataDir+"/") {
			if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
				t.Logf("remove container %s: %v", c.ID, err)
			}
		}
	}
}
