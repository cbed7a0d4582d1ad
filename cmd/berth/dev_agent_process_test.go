package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// startDevAgent starts `berth agent -dev` with its berth-hostpath plugin,
// and waits until the plugin is healthy. The agent's tasks and mounts go
// with the test.
func startDevAgent(t *testing.T) (bin string, a *agentProc) {
	t.Helper()
	return startDevAgentWith(t, "")
}

// startDevAgentWith is startDevAgent with more of the agent's config
// (HCL blocks: a plugin, say).
func startDevAgentWith(t *testing.T, config string) (bin string, a *agentProc) {
	t.Helper()
	binDir := t.TempDir()
	bin = filepath.Join(binDir, "berth")
	must.NoError(t, os.Rename(buildBerth(t), bin))
	must.NoError(t, os.Rename(csitest.HostpathBinary(t), filepath.Join(binDir, "berth-hostpath")))
	dataDir, err := os.MkdirTemp("", "bui") // short: plugin sockets live under it
	must.NoError(t, err)
	ports := testlog.FreePorts(t, "127.0.0.1", 3)
	a = &agentProc{name: "dev", httpPort: ports[0], rpcPort: ports[1], serfPort: ports[2], dataDir: dataDir, log: &lockedBuffer{}}
	// Volume usage every second, not every minute, so that a test sees it.
	configFile := filepath.Join(binDir, "dev.hcl")
	must.NoError(t, os.WriteFile(configFile, []byte("client {\n  volume_stats_interval = \"1s\"\n}\n"+config), 0o644))
	a.cmd = exec.Command(bin, "agent", "-dev", "-config", configFile, "-data-dir", dataDir, "-http-port", strconv.Itoa(a.httpPort),
		"-rpc-port", strconv.Itoa(a.rpcPort), "-serf-port", strconv.Itoa(a.serfPort))
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	must.NoError(t, a.cmd.Start())
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
		clienttest.KillTasksUnder(dataDir)
		_, _ = bexec.DetachMountsUnder(dataDir, nil)
		_ = os.RemoveAll(dataDir)
		if t.Failed() {
			t.Logf("--- dev agent log ---\n%s", a.log.String())
		}
	})
	waitUntil(t, 60*time.Second, "the dev agent's hostpath plugin healthy", func() bool {
		var p structs.CSIPlugin
		return fetchJSON(a.httpAddr()+"/v1/plugin/csi/hostpath", &p) == nil && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})
	return bin, a
}

// devWriterJob writes the time to the volume "data" and to its stdout
// once, then sleeps; it stops at once on SIGTERM.
const devWriterJob = `
job "writer" {
  type = "service"
  group "writer" {
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "writer" {
      driver       = "exec"
      kill_timeout = "2s"
      config {
        command = "/bin/sh"
        args    = ["-c", "date -u +%FT%TZ | tee -a /data/out.txt; exec sleep 3600"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`
