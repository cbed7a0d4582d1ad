package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// threeServers starts three server agents and waits for them to agree on
// a leader, whose RPC address it returns.
func threeServers(t *testing.T, bin string, extra ...string) ([]*agentProc, string) {
	t.Helper()
	ports := testlog.FreePorts(t, "127.0.0.1", 9)
	var agents []*agentProc
	for i := 0; i < 3; i++ {
		a := &agentProc{name: fmt.Sprintf("s%d", i), dataDir: t.TempDir(),
			httpPort: ports[3*i], rpcPort: ports[3*i+1], serfPort: ports[3*i+2]}
		join := ""
		if i > 0 {
			join = "127.0.0.1:" + strconv.Itoa(agents[0].serfPort)
		}
		startAgent(t, bin, a, join, extra...)
		agents = append(agents, a)
	}
	return agents, waitLeader(t, agents, "", 60*time.Second)
}

// startClientAgent starts a client agent process with one monolith plugin
// on socket.
func startClientAgent(t *testing.T, bin string, servers []*agentProc, pluginID, socket string) {
	t.Helper()
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, strconv.Quote(s.rpcAddr()))
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "client.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
name     = "client-1"
data_dir = %q
ports { http = %d }
client {
  enabled = true
  servers = [%s]
}
plugin %q {
  type   = "monolith"
  socket = %q
}
`, filepath.Join(dir, "data"), testlog.FreePorts(t, "127.0.0.1", 1)[0], strings.Join(addrs, ", "), pluginID, socket)), 0o600))
	log := &strings.Builder{}
	cmd := exec.Command(bin, "agent", "-config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	must.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("--- client log ---\n%s", log.String())
		}
	})
}

// timedCLI runs a CLI command that must succeed and logs how long it took.
func timedCLI(t *testing.T, bin string, a *agentProc, args ...string) string {
	t.Helper()
	start := time.Now()
	out, stderr, code := berthCLI(t, bin, a, args...)
	must.Zero(t, code, must.Sprintf("berth %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, stderr))
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if filepath.IsAbs(a) {
			shown[i] = filepath.Base(a)
		}
	}
	t.Logf("figure: berth %s: %s", strings.Join(shown, " "), time.Since(start).Round(time.Millisecond))
	return out
}

func statusJSON(t *testing.T, bin string, a *agentProc, id string) *structs.CSIVolume {
	t.Helper()
	out, stderr, code := berthCLI(t, bin, a, "volume", "status", "-json", id)
	must.Zero(t, code, must.Sprint(stderr))
	var vol structs.CSIVolume
	must.NoError(t, json.Unmarshal([]byte(out), &vol))
	return &vol
}

func writeSpec(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	must.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// inZoneC1 is a volume spec's topology_request for zone c1.
const inZoneC1 = `topology_request {
  required {
    topology { segments = { zone = "c1" } }
  }
}`

func volumeSpec(id, extra string) string {
	return fmt.Sprintf(`
id        = %q
type      = "csi"
plugin_id = "hostpath"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
%s
`, id, extra)
}

// TestProcess_StorageLifecycle_CLI drives create, expand, snapshot,
// restore and delete through the CLI against three server processes and a
// client process running berth-hostpath.
func TestProcess_StorageLifecycle_CLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and starts four agents")
	}
	bin := buildBerth(t)
	servers, _ := threeServers(t, bin)
	root := t.TempDir()
	hp := csitest.StartHostpath(t, "-root", root)
	startClientAgent(t, bin, servers, "hostpath", hp.Socket)
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		out, _, code := berthCLI(t, bin, servers[1], "plugin", "status", "-json", "hostpath")
		var p structs.CSIPlugin
		return code == 0 && json.Unmarshal([]byte(out), &p) == nil && p.ControllersHealthy == 1
	})
	s0, s1, s2 := servers[0], servers[1], servers[2]
	volumes := func() []string {
		entries, err := os.ReadDir(filepath.Join(root, "volumes"))
		must.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	// Create, twice: one volume at the provider.
	spec := writeSpec(t, "data.hcl", volumeSpec("data", `capacity_min = "1MiB"`+"\nsecrets { token = \"hunter2\" }"))
	out := timedCLI(t, bin, s0, "volume", "create", spec)
	must.StrContains(t, out, "data")
	must.StrNotContains(t, out, "hunter2")
	timedCLI(t, bin, s1, "volume", "create", spec)
	must.SliceLen(t, 1, volumes(), must.Sprint("a repeated create makes no second volume"))
	data := statusJSON(t, bin, s2, "data")
	must.Eq(t, int64(1<<20), data.Capacity)

	// Expand by creating again with a larger capacity_min.
	bigger := writeSpec(t, "bigger.hcl", volumeSpec("data", `capacity_min = "4MiB"`+"\nsecrets { token = \"hunter2\" }"))
	timedCLI(t, bin, s2, "volume", "create", bigger)
	must.Eq(t, int64(4<<20), statusJSON(t, bin, s0, "data").Capacity)

	// Data in the volume, then a snapshot of it.
	must.NoError(t, os.WriteFile(filepath.Join(root, "volumes", data.ExternalID, "hello.txt"), []byte("kept\n"), 0o644))
	out = timedCLI(t, bin, s1, "volume", "snapshot", "create", "-json", "data", "before-upgrade")
	var snap structs.CSISnapshot
	must.NoError(t, json.Unmarshal([]byte(out), &snap), must.Sprint(out))
	must.NotEq(t, "", snap.ID)
	out = timedCLI(t, bin, s2, "volume", "snapshot", "list", "-plugin", "hostpath")
	must.StrContains(t, out, snap.ID)

	// Restore it into a new volume: the data is there.
	restore := writeSpec(t, "restore.hcl", volumeSpec("restored", fmt.Sprintf("snapshot_id = %q", snap.ID)))
	timedCLI(t, bin, s0, "volume", "create", restore)
	restored := statusJSON(t, bin, s1, "restored")
	got, err := os.ReadFile(filepath.Join(root, "volumes", restored.ExternalID, "hello.txt"))
	must.NoError(t, err)
	must.EqOp(t, "kept\n", string(got))

	timedCLI(t, bin, s0, "volume", "snapshot", "delete", "hostpath", snap.ID)
	out = timedCLI(t, bin, s1, "volume", "snapshot", "list", "-plugin", "hostpath")
	must.StrNotContains(t, out, snap.ID)

	// Bad input: clear errors naming the field, nothing registered.
	for _, bad := range []struct{ body, want string }{
		{volumeSpec("bad1", `capacity_min = "10QB"`), "capacity_min"},
		{volumeSpec("bad2", "capacity_min = \"2GiB\"\ncapacity_max = \"1GiB\""), "capacity_max"},
		{volumeSpec("bad3", "snapshot_id = \"a\"\nclone_id = \"b\""), "clone_id"},
	} {
		_, stderr, code := berthCLI(t, bin, s0, "volume", "create", writeSpec(t, "bad.hcl", bad.body))
		must.EqOp(t, 1, code)
		must.StrContains(t, stderr, bad.want)
	}
	_, stderr, code := berthCLI(t, bin, s0, "volume", "snapshot", "create", "nope")
	must.EqOp(t, 1, code)
	must.StrContains(t, stderr, "nope")

	timedCLI(t, bin, s2, "volume", "delete", "data")
	timedCLI(t, bin, s2, "volume", "delete", "restored")
	must.SliceEmpty(t, volumes(), must.Sprint("deleted volumes are gone at the provider"))
	out, _, _ = berthCLI(t, bin, s0, "volume", "status")
	must.StrNotContains(t, out, "restored")
}
