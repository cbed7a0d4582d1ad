package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// clientProc is one client agent process with its own data dir.
type clientProc struct {
	t       *testing.T
	name    string
	bin     string
	cfg     string
	dataDir string
	cmd     *exec.Cmd
	log     *lockedBuffer
}

// lockedBuffer is an agent's log, written by its process's copier and
// read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWorkloadClient starts a client agent named name, with no plugin of
// its own: plugins come as plugin tasks. Its data dir is short enough for
// plugin sockets. When the test ends, the tasks it ran are killed and its
// mounts detached, whatever state the test left them in.
func startWorkloadClient(t *testing.T, bin string, servers []*agentProc, name string) *clientProc {
	t.Helper()
	return startWorkloadClientAt(t, bin, servers, name, "127.0.0.1")
}

// startWorkloadClientAt is startWorkloadClient with the agent bound to
// (and dialing the servers from) the loopback address bind.
func startWorkloadClientAt(t *testing.T, bin string, servers []*agentProc, name, bind string) *clientProc {
	t.Helper()
	return startWorkloadClientWith(t, bin, servers, name, bind, "")
}

// startWorkloadClientWith is startWorkloadClientAt with more agent config
// (HCL blocks: tls, acl) appended to the client's.
func startWorkloadClientWith(t *testing.T, bin string, servers []*agentProc, name, bind, extraHCL string) *clientProc {
	t.Helper()
	dataDir, err := os.MkdirTemp("", "bc")
	must.NoError(t, err)
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, strconv.Quote(s.rpcAddr()))
	}
	c := &clientProc{t: t, name: name, bin: bin, dataDir: dataDir, cfg: filepath.Join(t.TempDir(), "client.hcl")}
	must.NoError(t, os.WriteFile(c.cfg, []byte(fmt.Sprintf(`
name      = %q
data_dir  = %q
bind_addr = %q
ports { http = %d }
client {
  enabled          = true
  servers          = [%s]
  allow_root_tasks = true # the plugin tasks; the workloads run as nobody
}
%s
`, name, dataDir, bind, testlog.FreePorts(t, "127.0.0.1", 1)[0], strings.Join(addrs, ", "), extraHCL)), 0o600))
	t.Cleanup(func() {
		c.signal(syscall.SIGTERM)
		clienttest.KillTasksUnder(dataDir)
		_, _ = bexec.DetachMountsUnder(dataDir, nil)
		_ = os.RemoveAll(dataDir)
		if t.Failed() {
			t.Logf("--- client %s log ---\n%s", name, c.log.String())
		}
	})
	c.start()
	return c
}

func (c *clientProc) start() {
	c.t.Helper()
	if c.log == nil {
		c.log = &lockedBuffer{}
	}
	c.cmd = exec.Command(c.bin, "agent", "-config", c.cfg)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	must.NoError(c.t, c.cmd.Start())
}

// signal sends sig and waits for the agent to exit.
func (c *clientProc) signal(sig syscall.Signal) {
	if c.cmd == nil || c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	_ = c.cmd.Wait()
}

// readyNodes waits until n nodes are ready (berth node status).
func readyNodes(t *testing.T, bin string, s *agentProc, n int, timeout time.Duration) {
	t.Helper()
	waitUntil(t, timeout, fmt.Sprintf("%d ready nodes", n), func() bool {
		out, _, code := berthCLI(t, bin, s, "node", "status")
		return code == 0 && strings.Count(out, "ready") == n
	})
}

// waitUntil polls f every 50ms until it is true or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(f), wait.Timeout(timeout), wait.Gap(50*time.Millisecond)),
		must.Sprintf("timed out after %s waiting for %s", timeout, what))
}

// jobAllocs is the job's allocations (GET /v1/job/:id/allocations).
func jobAllocs(t *testing.T, bin string, a *agentProc, job string) []*structs.AllocListStub {
	t.Helper()
	var allocs []*structs.AllocListStub
	getJSON(t, a.httpAddr()+"/v1/job/"+job+"/allocations", &allocs)
	return allocs
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.EqOp(t, http.StatusOK, resp.StatusCode, must.Sprint(url))
	must.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

// running lists the job's allocations that run.
func running(allocs []*structs.AllocListStub) []*structs.AllocListStub {
	var out []*structs.AllocListStub
	for _, a := range allocs {
		if a.ClientStatus == structs.AllocClientStatusRunning && a.DesiredStatus == structs.AllocDesiredStatusRun {
			out = append(out, a)
		}
	}
	return out
}

// claimedBy reports whether any claim of the volume, held or being
// released, is the alloc's.
func claimedBy(vol *structs.CSIVolume, allocID string) bool {
	_, r := vol.ReadClaims[allocID]
	_, w := vol.WriteClaims[allocID]
	_, p := vol.PastClaims[allocID]
	return r || w || p
}

// mountsUnder lists the mount points under dir on the host.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	mps, err := bexec.MountsUnder(dir)
	must.NoError(t, err)
	return mps
}

// volumeJob is a job with one group of count allocations mounting volume
// at /data and running script in sh.
func volumeJob(id string, count int, volume, mode string, script string) string {
	return fmt.Sprintf(`
job %q {
  type = "service"
  group "g" {
    count = %d
    volume "data" {
      type            = "csi"
      source          = %q
      access_mode     = %q
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`, id, count, volume, mode, script)
}

// TestProcess_Workloads runs the claim lifecycle on three server processes
// and two client processes (c1, c2), with berth-hostpath run as a system
// job (one instance per client, each in its own zone): a writer places in
// its volume's zone, a second writer waits and says why, the first one's
// stop frees the claim and the second places and reads what the first
// wrote; a client restart under two allocs sharing a staged volume
// unstages nothing; a killed client's node goes down and its claims are
// released by the servers.
func TestProcess_Workloads(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot := t.TempDir() // made before the clients: removed after them
	servers, _ := threeServers(t, bin)
	s := servers[0]
	c1 := startWorkloadClient(t, bin, servers, "c1")
	startWorkloadClient(t, bin, servers, "c2")
	readyNodes(t, bin, s, 2, 30*time.Second)

	// The plugin, as a system job: one instance per node, registered when
	// healthy.
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath")))
	must.SliceLen(t, 2, running(jobAllocs(t, bin, s, "hostpath-plugin")))
	waitUntil(t, 30*time.Second, "hostpath healthy on both nodes", func() bool {
		out, _, code := berthCLI(t, bin, s, "plugin", "status", "-json", "hostpath")
		var p structs.CSIPlugin
		return code == 0 && json.Unmarshal([]byte(out), &p) == nil && p.NodesHealthy == 2 && p.ControllersHealthy == 2
	})

	// A volume in zone c1: created by c1's instance, placed only on c1.
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data",
		inZoneC1)))

	start := time.Now()
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "writer.hcl", volumeJob("writer", 1, "data", "single-node-writer",
		`echo "written by the writer" > /data/out.txt; exec sleep 1000`)))
	t.Logf("figure: claim to running (job run until its alloc runs, volume staged and published): %s", time.Since(start).Round(time.Millisecond))
	writer := running(jobAllocs(t, bin, s, "writer"))
	must.SliceLen(t, 1, writer)
	nodes := nodeIDsByName(t, bin, s)
	must.EqOp(t, nodes["c1"], writer[0].NodeID, must.Sprint("the zone c1 volume places on c1 only"))
	must.MapContainsKey(t, statusJSON(t, bin, s, "data").WriteClaims, writer[0].ID)
	published := filepath.Join(c1.dataDir, "client", "csi", "hostpath", "per-alloc", writer[0].ID, "data")
	must.SliceContains(t, mountsUnder(t, c1.dataDir), published)

	// The second writer is not placed, and says which alloc holds it.
	out, stderr, code := berthCLI(t, bin, s, "job", "run", writeSpec(t, "second.hcl", volumeJob("second", 1, "data", "single-node-writer",
		`cat /data/out.txt; echo "and the second" >> /data/out.txt; exec sleep 1000`)))
	must.EqOp(t, 1, code, must.Sprint(out, stderr))
	must.StrContains(t, out+stderr, `volume "data"`)
	must.StrContains(t, out+stderr, writer[0].ID[:8])
	must.StrContains(t, stderr, "could not be placed yet")

	// Stopping the writer frees its claim; the second is then placed by
	// the servers, unasked, and reads the file.
	start = time.Now()
	timedCLI(t, bin, s, "job", "stop", "writer")
	waitUntil(t, 30*time.Second, "the writer's claim freed", func() bool { return !claimedBy(statusJSON(t, bin, s, "data"), writer[0].ID) })
	t.Logf("figure: stop to freed (job stop until the volume holds no claim of the writer): %s", time.Since(start).Round(time.Millisecond))
	for _, mp := range mountsUnder(t, c1.dataDir) {
		must.StrNotContains(t, mp, writer[0].ID, must.Sprintf("nothing of the writer stays mounted on c1 (%s was)", published))
	}
	var second []*structs.AllocListStub
	waitUntil(t, 30*time.Second, "the second writer running", func() bool {
		second = running(jobAllocs(t, bin, s, "second"))
		return len(second) == 1
	})
	must.EqOp(t, nodes["c1"], second[0].NodeID)
	waitUntil(t, 10*time.Second, "the second writer's log", func() bool {
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", second[0].ID, "t")
		return out == "written by the writer\n"
	})
	timedCLI(t, bin, s, "job", "stop", "second")
	waitUntil(t, 30*time.Second, "the volume free", func() bool { return !statusJSON(t, bin, s, "data").InUse() })

	// Two allocs on c1 share one staged volume; a restart of c1's agent
	// unstages nothing and leaves both running.
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "shared.hcl", strings.Replace(volumeSpec("shared",
		inZoneC1), "single-node-writer", "multi-node-multi-writer", 1)))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "pair.hcl", volumeJob("pair", 2, "shared", "multi-node-multi-writer",
		`echo "$BERTH_ALLOC_ID" >> /data/allocs; exec sleep 1000`)))
	pair := running(jobAllocs(t, bin, s, "pair"))
	must.SliceLen(t, 2, pair)
	before := mountsUnder(t, c1.dataDir)
	staged := filepath.Join(c1.dataDir, "client", "csi", "hostpath", "staging", "shared")
	must.SliceContains(t, before, staged)
	c1.signal(syscall.SIGTERM)
	must.SliceContains(t, mountsUnder(t, c1.dataDir), staged, must.Sprint("a stopped agent leaves the volume staged"))
	logged := len(c1.log.String())
	c1.start()
	waitUntil(t, 30*time.Second, "the restarted c1 reattached to its 3 tasks (plugin and pair)", func() bool {
		return strings.Count(c1.log.String()[logged:], "reattached to task") == 3
	})
	// The restored allocs claim again while the plugin task registers
	// again; before the fix they failed and unstaged within 100 ms. Every
	// sample over 3 s must show the same mounts.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		must.Eq(t, before, mountsUnder(t, c1.dataDir), must.Sprint("the restarted client unstaged or unpublished nothing"))
	}
	must.StrNotContains(t, c1.log.String()[logged:], "volume setup failed")
	must.NoError(t, syscall.Kill(c1.cmd.Process.Pid, 0), must.Sprint("the restarted agent runs"))
	must.SliceLen(t, 2, running(jobAllocs(t, bin, s, "pair")))

	// Kill c1's agent: its node goes down, its allocs are lost, and the
	// servers release the claims (node detach skipped on a down node). The
	// volume is in zone c1, so only c1's controller may unpublish it: the
	// claims wait there, not freed, rather than go to c2's instance.
	c1.signal(syscall.SIGKILL)
	start = time.Now()
	waitUntil(t, 60*time.Second, "the killed client's claims released", func() bool {
		vol := statusJSON(t, bin, s, "shared")
		return len(vol.WriteClaims)+len(vol.ReadClaims) == 0
	})
	t.Logf("figure: client killed to its claims released (heartbeat TTL 10s): %s", time.Since(start).Round(time.Millisecond))
	var c1Node *structs.Node
	getJSON(t, s.httpAddr()+"/v1/node/"+nodes["c1"], &c1Node)
	must.EqOp(t, structs.NodeStatusDown, c1Node.Status)
	must.SliceContains(t, mountsUnder(t, c1.dataDir), staged,
		must.Sprint("still staged on c1: the servers released the claims without its client"))
	pairNow := jobAllocs(t, bin, s, "pair")
	must.SliceLen(t, 2, pairNow)
	for _, a := range pairNow {
		must.EqOp(t, structs.AllocClientStatusLost, a.ClientStatus)
	}
	orphans := clienttest.TasksUnder(c1.dataDir)
	must.GreaterEq(t, 3, len(orphans), must.Sprint("the plugin and the pair's two tasks outlive their agent"))

	// c1 comes back: it kills what it ran of the lost allocs (the old
	// plugin task included), unpublishes and unstages their volume, and
	// the servers free the claims.
	c1.start()
	waitUntil(t, 60*time.Second, "the lost allocs' tasks killed", func() bool {
		for _, pid := range orphans {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	waitUntil(t, 60*time.Second, "nothing of the lost allocs mounted on c1", func() bool {
		// A replacement placed on c1 once it is back stages the volume
		// there again, rightly: the staging counts only without one.
		replaced := false
		for _, a := range jobAllocs(t, bin, s, "pair") {
			if a.NodeID == nodes["c1"] && a.ID != pairNow[0].ID && a.ID != pairNow[1].ID && a.DesiredStatus == structs.AllocDesiredStatusRun {
				replaced = true
			}
		}
		for _, mp := range mountsUnder(t, c1.dataDir) {
			if mp == staged && !replaced || strings.Contains(mp, pairNow[0].ID) || strings.Contains(mp, pairNow[1].ID) {
				return false
			}
		}
		return true
	})
	waitUntil(t, 60*time.Second, "the lost allocs' claims freed", func() bool {
		vol := statusJSON(t, bin, s, "shared")
		return !claimedBy(vol, pairNow[0].ID) && !claimedBy(vol, pairNow[1].ID)
	})
	// The servers replaced the lost pair once c1 was back; stopped, the
	// volume is free and can be deleted: nothing of it stays staged.
	timedCLI(t, bin, s, "job", "stop", "pair")
	waitUntil(t, 60*time.Second, "the volume free", func() bool { return !statusJSON(t, bin, s, "shared").InUse() })
	timedCLI(t, bin, s, "volume", "delete", "shared")
}

// alive reports whether the process runs: it exists and is not a zombie
// waiting to be reaped.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// nodeIDsByName maps node names to IDs (GET /v1/nodes).
func nodeIDsByName(t *testing.T, bin string, a *agentProc) map[string]string {
	t.Helper()
	var nodes []*structs.NodeListStub
	getJSON(t, a.httpAddr()+"/v1/nodes", &nodes)
	m := map[string]string{}
	for _, n := range nodes {
		m[n.Name] = n.ID
	}
	return m
}
