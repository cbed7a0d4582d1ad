package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// partition drops every packet to and from the loopback address addr
// (iptables, tagged with this test's pid); heal removes the rules, and
// the test's end does if it has not. It skips the test, saying why, where
// iptables cannot be used.
func partition(t *testing.T, addr string) (heal func()) {
	t.Helper()
	tag := fmt.Sprintf("berth-test-%d", os.Getpid())
	rules := [][]string{
		{"INPUT", "-s", addr, "-j", "DROP", "-m", "comment", "--comment", tag},
		{"INPUT", "-d", addr, "-j", "DROP", "-m", "comment", "--comment", tag},
	}
	var added [][]string
	heal = func() {
		for _, r := range added {
			if out, err := exec.Command("iptables", append([]string{"-D"}, r...)...).CombinedOutput(); err != nil {
				t.Errorf("iptables -D %s: %v: %s", strings.Join(r, " "), err, out)
			}
		}
		added = nil
	}
	t.Cleanup(heal)
	for _, r := range rules {
		out, err := exec.Command("iptables", append([]string{"-I"}, r...)...).CombinedOutput()
		if err != nil {
			heal()
			testlog.Skip(t, fmt.Sprintf("cannot partition %s with iptables (%v: %s); this test needs root and iptables", addr, err, out))
		}
		added = append(added, r)
	}
	return heal
}

// keepWriter is a writer on volume "keep" that opts out of the fence: it
// appends "K <unix nanos>" to /data/klog every 50 ms.
const keepWriter = `
job "k" {
  group "g" {
    disconnect { stop_on_client = false }
    volume "data" {
      type            = "csi"
      source          = "keep"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while :; do echo \"K $(date +%s%N)\" >> /data/klog; sleep 0.05; done"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`

// TestProcess_PartitionedClient cuts client c1 off from the three servers
// (iptables between 127.0.0.21 and the rest) past the heartbeat TTL while
// two writers run there:
//   - writer A (SIGTERM ignored, kill_timeout 30s) is stopped by its own
//     client, the fence: its last write precedes the moment the servers
//     freed its claim;
//   - writer K opts out of the fence and runs on through the partition;
//     its node is marked down and its claim freed without it.
//
// When the partition heals, c1 kills K's task and the lost plugin task,
// unpublishes K's volume (before the plugin goes), and once the
// replacements the servers placed are stopped, both volumes delete (the
// plugin refuses to delete a volume still staged).
func TestProcess_PartitionedClient(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts; the partition is an iptables rule")
	bin, s, c1, pluginRoot := cutOffWorld(t, "data", "keep")
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "a.hcl", stubbornWriter("a", "A", "30s")))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "k.hcl", keepWriter))
	a, k := running(jobAllocs(t, bin, s, "a")), running(jobAllocs(t, bin, s, "k"))
	must.SliceLen(t, 1, a)
	must.SliceLen(t, 1, k)
	must.SliceLen(t, 1, running(jobAllocs(t, bin, s, "hostpath-plugin")))
	before := clienttest.TasksUnder(c1.dataDir) // the plugin, A and K (and their children)
	must.GreaterEq(t, 3, len(before))
	waitUntil(t, 10*time.Second, "A's first write", func() bool { lastA, _ := writes(t, pluginRoot); return lastA > 0 })

	cut := time.Now()
	heal := partition(t, "127.0.0.21")
	down := fencedBeforeFreed(t, s, pluginRoot, a[0].ID, cut, "partition")
	waitUntil(t, 5*time.Second, "K writing on while its node is down (it opted out of the fence)", func() bool {
		return lastKeep(t, pluginRoot).After(down.Add(time.Second))
	})

	heal()
	healed := time.Now()
	readyNodes(t, bin, s, 1, 60*time.Second)
	waitUntil(t, 60*time.Second, "K's task and the lost plugin task killed", func() bool {
		return !slices.ContainsFunc(before, alive)
	})
	waitUntil(t, 60*time.Second, "K's volume unpublished on c1", func() bool {
		return !slices.ContainsFunc(mountsUnder(t, c1.dataDir), func(mp string) bool { return strings.Contains(mp, k[0].ID) })
	})
	// The servers replaced A and K on c1 once it was back; with those
	// stopped, nothing of either volume is left on c1 and both delete.
	timedCLI(t, bin, s, "job", "stop", "a")
	timedCLI(t, bin, s, "job", "stop", "k")
	for _, id := range []string{"keep", "data"} {
		waitUntil(t, 60*time.Second, "volume "+id+" deleted", func() bool {
			_, _, code := berthCLI(t, bin, s, "volume", "delete", id)
			return code == 0
		})
	}
	t.Logf("figure: partition healed to both volumes deleted: %s", time.Since(healed).Round(time.Millisecond))
	must.StrNotContains(t, c1.log.String(), "cannot unmount volume", must.Sprint("K's volume is unmounted before the lost plugin is stopped"))
}

// cutOffWorld starts three servers and client c1 on 127.0.0.21, with
// berth-hostpath as a system job (no controller publish: with c1 cut off,
// the release has no step that needs c1's controller, and a claim is freed
// once c1 is down) and the volumes named.
func cutOffWorld(t *testing.T, volumes ...string) (bin string, s *agentProc, c1 *clientProc, pluginRoot string) {
	t.Helper()
	return cutOffWorldWith(t, nil, volumes...)
}

// cutOffWorldWith is cutOffWorld with the servers' extra agent arguments.
func cutOffWorldWith(t *testing.T, serverArgs []string, volumes ...string) (bin string, s *agentProc, c1 *clientProc, pluginRoot string) {
	t.Helper()
	bin = buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot = t.TempDir()
	servers, _ := threeServers(t, bin, serverArgs...)
	s = servers[0]
	c1 = startWorkloadClientAt(t, bin, servers, "c1", "127.0.0.21")
	readyNodes(t, bin, s, 1, 30*time.Second)
	plugin := strings.Replace(csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath"), `"-node-id"`, `"-disable-attach", "-node-id"`, 1)
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", plugin))
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})
	for _, id := range volumes {
		timedCLI(t, bin, s, "volume", "create", writeSpec(t, id+".hcl", volumeSpec(id, "")))
	}
	return bin, s, c1, pluginRoot
}

// watchRelease samples, from the servers' side, the alloc's claim on the
// volume and the (only) node until the node is down and the claim freed,
// and returns when each was first seen. The claim must be seen taken
// first.
func watchRelease(t *testing.T, s *agentProc, volume, allocID string) (downAt, freedAt time.Time) {
	t.Helper()
	sawTaken := false
	waitUntil(t, 60*time.Second, "the alloc's claim freed by the servers", func() bool {
		var vol structs.CSIVolume
		var nodes []*structs.NodeListStub
		if fetchJSON(s.httpAddr()+"/v1/volume/csi/"+volume, &vol) != nil || fetchJSON(s.httpAddr()+"/v1/nodes", &nodes) != nil {
			return false
		}
		now := time.Now()
		if vol.WriteClaims[allocID] != nil {
			sawTaken = true
		} else if c := vol.PastClaims[allocID]; (c == nil || c.State == structs.CSIVolumeClaimStateFreed) && freedAt.IsZero() {
			freedAt = now
		}
		if len(nodes) == 1 && nodes[0].Status == structs.NodeStatusDown && downAt.IsZero() {
			downAt = now
		}
		return !freedAt.IsZero() && !downAt.IsZero()
	})
	must.True(t, sawTaken, must.Sprint("the claim was held until the node was down"))
	return downAt, freedAt
}

// fencedBeforeFreed waits for writer A's (alloc allocID) claim on volume
// "data" to be freed by the servers, then checks that A's last write came
// before, and logs the figures from cut, what happened. It returns when
// the node was seen down.
func fencedBeforeFreed(t *testing.T, s *agentProc, pluginRoot, allocID string, cut time.Time, what string) (down time.Time) {
	t.Helper()
	down, freed := watchRelease(t, s, "data", allocID)
	time.Sleep(time.Until(freed.Add(time.Second))) // a writer still alive writes again within 50 ms
	lastA, _ := writes(t, pluginRoot)
	lastAt := time.Unix(0, lastA)
	must.True(t, lastAt.Before(freed), must.Sprintf("A wrote at %s, after its claim was freed at %s", lastAt.Sub(cut), freed.Sub(cut)))
	t.Logf("figure: %s, then: A's last write (the fence) %s after; node down %s; claim freed %s; A's last write to freed: %s", what,
		lastAt.Sub(cut).Round(time.Millisecond), down.Sub(cut).Round(time.Millisecond),
		freed.Sub(cut).Round(time.Millisecond), freed.Sub(lastAt).Round(time.Millisecond))
	return down
}

// TestProcess_PartitionedClient_StretchedTTL: the fence's order holds
// when the servers stretch the heartbeat TTL for the fleet. With
// max_heartbeats_per_second 0.12 and one node (4.8 heartbeats a TTL), the
// TTL is 40 s, four
// times the 10 s floor: client c1, cut off, fences writer A at half the
// TTL it was handed (20 s after its last contact, so at least 10 s after
// the cut, where half the floor's would be at most 5 s), the servers mark
// it down only once that TTL has passed, and A's last write comes before
// its claim is freed.
func TestProcess_PartitionedClient_StretchedTTL(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts; the partition is an iptables rule")
	cfg := filepath.Join(t.TempDir(), "server.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte("server {\n  max_heartbeats_per_second = 0.12\n}\n"), 0o600))
	bin, s, _, pluginRoot := cutOffWorldWith(t, []string{"-config", cfg}, "data")
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "a.hcl", stubbornWriter("a", "A", "30s")))
	a := running(jobAllocs(t, bin, s, "a"))
	must.SliceLen(t, 1, a)
	var nodes []*structs.NodeListStub
	must.NoError(t, fetchJSON(s.httpAddr()+"/v1/nodes", &nodes))
	must.SliceLen(t, 1, nodes)
	waitUntil(t, 10*time.Second, "A's first write", func() bool { lastA, _ := writes(t, pluginRoot); return lastA > 0 })

	cut := time.Now()
	partition(t, "127.0.0.21")
	down := fencedBeforeFreed(t, s, pluginRoot, a[0].ID, cut, "partition at a stretched TTL (40 s)")
	lastA, _ := writes(t, pluginRoot)
	must.Greater(t, 6*time.Second, time.Unix(0, lastA).Sub(cut),
		must.Sprint("the client fenced at half the stretched TTL it was handed, not the floor's"))
	must.Greater(t, 29*time.Second, down.Sub(cut), must.Sprint("the servers marked the node down only past the stretched TTL"))
}

// TestProcess_ClientRestartedWhileCutOff: client c1 is killed (its
// writer runs on), cut off from the servers, and started again: before it
// has heard from any server, it fences what it left running, from the
// last contact it recorded, so the writer's last write still precedes the
// moment the servers free its claim. Once healed, the volume deletes.
func TestProcess_ClientRestartedWhileCutOff(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts; the partition is an iptables rule")
	bin, s, c1, pluginRoot := cutOffWorld(t, "data")
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "a.hcl", stubbornWriter("a", "A", "30s")))
	a := running(jobAllocs(t, bin, s, "a"))
	must.SliceLen(t, 1, a)
	waitUntil(t, 10*time.Second, "A's first write", func() bool { lastA, _ := writes(t, pluginRoot); return lastA > 0 })

	c1.signal(syscall.SIGKILL)
	cut := time.Now()
	heal := partition(t, "127.0.0.21")
	c1.start()
	fencedBeforeFreed(t, s, pluginRoot, a[0].ID, cut, "client killed, cut off and started again")
	must.StrContains(t, c1.log.String(), "no server reached for half the heartbeat TTL")

	heal()
	readyNodes(t, bin, s, 1, 60*time.Second)
	timedCLI(t, bin, s, "job", "stop", "a")
	waitUntil(t, 60*time.Second, "volume data deleted", func() bool {
		_, _, code := berthCLI(t, bin, s, "volume", "delete", "data")
		return code == 0
	})
}

// lastKeep is the time of K's last write to /data/klog.
func lastKeep(t *testing.T, root string) time.Time {
	t.Helper()
	out, err := exec.Command("sh", "-c", "cat $(find "+root+" -name klog) | tail -n 1").Output()
	must.NoError(t, err)
	var ns int64
	_, err = fmt.Sscanf(string(out), "K %d", &ns)
	must.NoError(t, err, must.Sprintf("K's last line: %q", out))
	return time.Unix(0, ns)
}
