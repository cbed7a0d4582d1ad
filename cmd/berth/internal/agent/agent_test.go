package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/api"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/cmd/berth/internal/spec"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestMain lets this test binary be the exec driver's task init, as the
// berth binary is.
func TestMain(m *testing.M) {
	bexec.Init()
	os.Exit(m.Run())
}

// givenPorts are the ports freePort handed out in this test process: the
// kernel may offer a port again once its listener is closed, and two of
// one agent's ports must differ.
var givenPorts sync.Map

func freePort(t *testing.T) int {
	t.Helper()
	for {
		port := testlog.FreePorts(t, "127.0.0.1", 1)[0]
		if _, dup := givenPorts.LoadOrStore(port, true); !dup {
			return port
		}
	}
}

// buildHostpath builds berth-hostpath into a temp dir on PATH, where the
// dev agent looks for it.
func buildHostpath(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "berth-hostpath"), "github.com/berth-csi/berth/cmd/berth-hostpath").CombinedOutput()
	must.NoError(t, err, must.Sprintf("build berth-hostpath: %s", out))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func getJSON(url string, out any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(out) == nil
}

func TestRun_Dev_ServesAndStopsCleanly(t *testing.T) {
	buildHostpath(t)
	httpPort := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Recorder{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"-dev", "-http-port", strconv.Itoa(httpPort),
			"-rpc-port", strconv.Itoa(freePort(t)), "-serf-port", strconv.Itoa(freePort(t))}, logs, logs)
	}()

	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	started := time.Now()
	var plug structs.CSIPlugin
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		return getJSON(base+"/v1/plugin/csi/hostpath", &plug) && plug.ControllersHealthy == 1 && plug.NodesHealthy == 1
	}), wait.Timeout(30*time.Second), wait.Gap(20*time.Millisecond)),
		must.Func(func() string { return "the built-in hostpath plugin never became healthy; logs:\n" + logs.String() }))
	must.Eq(t, "hostpath.berth.dev", plug.Provider)
	must.NotEq(t, "", plug.Version)
	must.StrContains(t, logs.String(), "dev mode: TLS and ACLs are off; do not expose this agent to a network")
	t.Logf("figure: dev agent start -> hostpath 1/1 healthy in %s", time.Since(started).Round(time.Millisecond))

	// A clean start: the client's first probe finds the built-in plugin
	// listening, so nothing is logged as an error or an unhealthy plugin,
	// and the node keeps no "became unhealthy" event.
	var nodes []*structs.NodeListStub
	must.True(t, getJSON(base+"/v1/nodes", &nodes))
	must.SliceLen(t, 1, nodes)
	var node structs.Node
	must.True(t, getJSON(base+"/v1/node/"+nodes[0].ID, &node))
	for _, e := range node.Events {
		must.StrNotContains(t, e.Message, "unhealthy", must.Sprint("a node event of a clean dev start"))
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "[ERROR]") || strings.Contains(line, "plugin unhealthy") {
			t.Errorf("logged on a clean dev start: %s", line)
		}
	}

	cancel()
	select {
	case code := <-exit:
		must.EqOp(t, 0, code, must.Sprint(logs.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("dev agent did not stop after its context ended")
	}
}

// devJobs are a second hostpath plugin run as a task (hp2), and a writer
// on a volume of each plugin: the built-in one and the plugin task.
const devJobs = `
job "hp2" {
  type = "system"
  group "plugin" {
    task "plugin" {
      driver = "exec"
      config {
        command = %q
        args    = ["-root", %q]
      }
      csi_plugin {
        id        = "hp2"
        type      = "monolith"
        mount_dir = "/csi"
      }
    }
  }
}
---
job "w" {
  group "g" {
    volume "a" {
      type            = "csi"
      source          = "a"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    volume "b" {
      type            = "csi"
      source          = "b"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while :; do date >> /a/log; date >> /b/log; sleep 0.1; done"]
      }
      volume_mount {
        volume      = "a"
        destination = "/a"
      }
      volume_mount {
        volume      = "b"
        destination = "/b"
      }
    }
  }
}
`

// TestRun_Dev_StopsWithAJobRunning: Ctrl-C of a dev agent running a writer
// on two volumes, one served by the built-in plugin and one by a plugin
// task: the writer stops and its volumes are unmounted while both plugins
// still run, then the plugin task stops; nothing is logged as an error or
// a failure to unmount, and no mount is left under the data dir.
func TestRun_Dev_StopsWithAJobRunning(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	buildHostpath(t)
	httpPort := freePort(t)
	dataDir, err := os.MkdirTemp("", "bdev") // short: plugin sockets live under it
	must.NoError(t, err)
	t.Cleanup(func() {
		_, _ = bexec.DetachMountsUnder(dataDir, nil)
		_ = os.RemoveAll(dataDir)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Recorder{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"-dev", "-data-dir", dataDir, "-http-port", strconv.Itoa(httpPort),
			"-rpc-port", strconv.Itoa(freePort(t)), "-serf-port", strconv.Itoa(freePort(t))}, logs, logs)
	}()
	cli, err := api.NewClient(api.Config{Address: "http://127.0.0.1:" + strconv.Itoa(httpPort)})
	must.NoError(t, err)
	healthy := func(id string) bool {
		var p structs.CSIPlugin
		return getJSON(cli.Address()+"/v1/plugin/csi/"+id, &p) && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	}
	waitFor(t, 30*time.Second, "the built-in plugin healthy", func() bool { return healthy("hostpath") }, logs)

	hostpath, err := exec.LookPath("berth-hostpath")
	must.NoError(t, err)
	jobs := strings.Split(fmt.Sprintf(devJobs, hostpath, t.TempDir()), "---")
	register := func(src string) {
		job, err := spec.ParseJob("job.hcl", []byte(src))
		must.NoError(t, err)
		_, _, err = cli.Jobs().Register(job)
		must.NoError(t, err)
	}
	register(jobs[0])
	waitFor(t, 30*time.Second, "the plugin task healthy", func() bool { return healthy("hp2") }, logs)
	for id, plugin := range map[string]string{"a": "hostpath", "b": "hp2"} {
		vol, err := spec.ParseVolume(id+".hcl", []byte(fmt.Sprintf(`id = %q
type = "csi"
plugin_id = %q
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`, id, plugin)))
		must.NoError(t, err)
		_, _, err = cli.CSIVolumes().Create(vol)
		must.NoError(t, err)
	}
	register(jobs[1])
	waitFor(t, 30*time.Second, "the writer running", func() bool {
		allocs, _, err := cli.Jobs().Allocations("w", nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning
	}, logs)
	mps, err := bexec.MountsUnder(dataDir)
	must.NoError(t, err)
	must.SliceNotEmpty(t, mps)

	cancel()
	select {
	case code := <-exit:
		must.EqOp(t, 0, code, must.Sprint(logs.String()))
	case <-time.After(60 * time.Second):
		t.Fatal("dev agent did not stop after its context ended")
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "[ERROR]") || strings.Contains(line, "unmount") && strings.Contains(line, "[WARN]") {
			t.Errorf("logged on shutdown: %s", line)
		}
	}
	mps, err = bexec.MountsUnder(dataDir)
	must.NoError(t, err)
	must.SliceEmpty(t, mps, must.Sprintf("mounts left under the dev data dir; logs:\n%s", logs.String()))
}

func waitFor(t *testing.T, timeout time.Duration, what string, f func() bool, logs *testlog.Recorder) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(timeout), wait.Gap(50*time.Millisecond)),
		must.Func(func() string {
			return fmt.Sprintf("timed out after %s waiting for %s; logs:\n%s", timeout, what, logs.String())
		}))
}

// TestRun_ServerAndClientInOneConfig: an agent whose config enables both a
// server and a client, with no servers listed, joins its own server (as
// -dev does) instead of failing with "no servers to join".
func TestRun_ServerAndClientInOneConfig(t *testing.T) {
	httpPort := freePort(t)
	cfgFile := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf(`
name     = "both"
data_dir = %q
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
}
`, t.TempDir(), httpPort, freePort(t), freePort(t))), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Recorder{}
	exit := make(chan int, 1)
	go func() { exit <- Run(ctx, []string{"-config", cfgFile}, logs, logs) }()
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	waitFor(t, 30*time.Second, "the agent's own node ready", func() bool {
		var nodes []*structs.NodeListStub
		return getJSON(base+"/v1/nodes", &nodes) && len(nodes) == 1 && nodes[0].Name == "both" && nodes[0].Status == structs.NodeStatusReady
	}, logs)
	cancel()
	select {
	case code := <-exit:
		must.EqOp(t, 0, code, must.Sprint(logs.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop after its context ended")
	}
}

// TestRun_Help: -h prints the options and exits 0, like every other -h.
func TestRun_Help(t *testing.T) {
	var out testlog.Recorder
	must.EqOp(t, 0, Run(context.Background(), []string{"-h"}, &out, &out))
	must.StrContains(t, out.String(), "-data-dir")
}
