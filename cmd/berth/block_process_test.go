package main_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/internal/testlog"
)

// blockVolumeSpec is the 16 MiB hostpath block volume "disk".
const blockVolumeSpec = `
id           = "disk"
type         = "csi"
plugin_id    = "hostpath"
capacity_min = "16MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "block-device"
}
`

// blockJob is a service job of one task of driver with the block volume
// "disk" at dest; config is the task's config block body.
func blockJob(id, driver, dest, config string) string {
	return fmt.Sprintf(`
job %q {
  group "g" {
    volume "disk" {
      type            = "csi"
      source          = "disk"
      access_mode     = "single-node-writer"
      attachment_mode = "block-device"
    }
    task "t" {
      driver       = %q
      kill_timeout = "1s"
      config {
%s
      }
      volume_mount {
        volume      = "disk"
        destination = %q
      }
    }
  }
}
`, id, driver, config, dest)
}

// TestProcess_BlockVolume: berth-hostpath's block volume (a loop device)
// in tasks of both drivers, one after the other on one dev agent: an
// exec task running as nobody writes bytes at an offset of the device
// (bound at disk in its task dir, a node of its group) and reads them
// back; then a container finds them there, at /dev/berthdisk through the
// engine's device mapping, and writes its own.
func TestProcess_BlockVolume(t *testing.T) {
	testlog.NeedRoot(t, "berth-hostpath attaches loop devices and makes device nodes")
	bin, a := startDevAgent(t)
	vol := writeSpec(t, "disk.hcl", blockVolumeSpec)
	out, errOut, code := berthCLI(t, bin, a, "volume", "create", vol)
	must.Zero(t, code, must.Sprintf("volume create: %s%s", out, errOut))

	logsOf := func(job, want string) string {
		t.Helper()
		var logs string
		defer func() {
			if t.Failed() {
				t.Logf("the last logs of job %s:\n%s", job, logs)
			}
		}()
		waitUntil(t, 60*time.Second, "job "+job+" prints "+want, func() bool {
			allocs := running(jobAllocs(t, bin, a, job))
			if len(allocs) != 1 {
				return false
			}
			logs, _, _ = berthCLI(t, bin, a, "alloc", "logs", allocs[0].ID, "t")
			stderr, _, _ := berthCLI(t, bin, a, "alloc", "logs", "-stderr", allocs[0].ID, "t")
			logs += stderr
			return strings.Contains(logs, want) || strings.Contains(logs, "FAILED")
		})
		return logs
	}
	stop := func(job string) {
		t.Helper()
		out, errOut, code := berthCLI(t, bin, a, "job", "stop", job)
		must.Zero(t, code, must.Sprintf("job stop %s: %s%s", job, out, errOut))
		waitUntil(t, 30*time.Second, "the volume freed by "+job, func() bool {
			v := statusJSON(t, bin, a, "disk")
			return len(v.WriteClaims)+len(v.ReadClaims)+len(v.PastClaims) == 0
		})
	}

	script := `id -u; ls -ln disk; ` +
		`printf berth-exec | dd of=disk bs=1 seek=4096 conv=notrunc status=none || echo FAILED write; ` +
		`echo "read: $(dd if=disk bs=1 skip=4096 count=10 status=none)"; exec sleep 3600`
	out, errOut, code = berthCLI(t, bin, a, "job", "run", "-detach", writeSpec(t, "exec.hcl",
		blockJob("exec-block", "exec", "disk", fmt.Sprintf("        command = \"/bin/sh\"\n        args    = [\"-c\", %q]", script))))
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))
	logs := logsOf("exec-block", "read: ")
	must.StrContains(t, logs, "65534\n", must.Sprintf("the task runs as nobody:\n%s", logs))
	must.StrContains(t, logs, "read: berth-exec", must.Sprint(logs))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^brw-rw---- +1 +0 +65534 `), logs, must.Sprint("a node of the tasks' group, not the host's /dev/loopN"))
	stop("exec-block")

	cli := dockertest.Client(t) // skips, saying why, without an engine
	image := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "../../client/drivers/docker/testdata/berthdb"))
	out, errOut, code = berthCLI(t, bin, a, "job", "run", "-detach", writeSpec(t, "docker.hcl",
		blockJob("docker-block", "docker", "/dev/berthdisk", fmt.Sprintf("        image = %q\n        args  = [\"pread:/dev/berthdisk:4096:10\", \"pwrite:/dev/berthdisk:8192:berth-docker\", \"pread:/dev/berthdisk:8192:12\", \"block\"]", image))))
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))
	logs = logsOf("docker-block", "pread /dev/berthdisk: berth-docker")
	must.StrContains(t, logs, "pread /dev/berthdisk: berth-exec", must.Sprint("the container reads what the exec task wrote:\n"+logs))
	stop("docker-block")
}
