package main_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// stubbornWriter is a job whose task appends "<tag> <unix nanos>" to
// /data/log every 50 ms and ignores SIGTERM: it dies only by SIGKILL,
// kill_timeout after its stop.
func stubbornWriter(id, tag, killTimeout string) string {
	return fmt.Sprintf(`
job %q {
  type = "service"
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver       = "exec"
      kill_timeout = %q
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'echo %s TERM ignored >&2' TERM; while :; do echo \"%s $(date +%%s%%N)\" >> /data/log; sleep 0.05; done"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`, id, killTimeout, tag, tag)
}

// writersWorld is three servers, clients c1 and c2 running berth-hostpath
// as a system job, volume "data" in zone c1, writer A running on it, and
// writer B waiting for it.
type writersWorld struct {
	bin        string
	s          *agentProc
	c1         *clientProc
	a          []*structs.AllocListStub
	pluginRoot string
	hostpath   string // the plugin's binary
}

// twoWriters builds a writersWorld; A has kill timeout killA, and edit
// may change the plugin job's spec.
func twoWriters(t *testing.T, killA string, edit func(pluginJob string) string) writersWorld {
	t.Helper()
	w := writersWorld{bin: buildBerth(t), pluginRoot: t.TempDir(), hostpath: csitest.HostpathBinary(t)}
	servers, _ := threeServers(t, w.bin)
	w.s = servers[0]
	w.c1 = startWorkloadClient(t, w.bin, servers, "c1")
	startWorkloadClient(t, w.bin, servers, "c2")
	readyNodes(t, w.bin, w.s, 2, 30*time.Second)
	timedCLI(t, w.bin, w.s, "job", "run", writeSpec(t, "plugin.hcl", edit(csitest.HostpathPluginJob(w.hostpath, w.pluginRoot, "hostpath"))))
	waitUntil(t, 30*time.Second, "hostpath healthy on both nodes", func() bool {
		p := pluginJSON(t, w.bin, w.s, "hostpath")
		return p != nil && p.NodesHealthy == 2
	})
	timedCLI(t, w.bin, w.s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data",
		inZoneC1)))
	timedCLI(t, w.bin, w.s, "job", "run", writeSpec(t, "a.hcl", stubbornWriter("a", "A", killA)))
	w.a = running(jobAllocs(t, w.bin, w.s, "a"))
	must.SliceLen(t, 1, w.a)
	_, _, code := berthCLI(t, w.bin, w.s, "job", "run", writeSpec(t, "b.hcl", stubbornWriter("b", "B", "1s")))
	must.EqOp(t, 1, code, must.Sprint("B waits for the claim"))
	return w
}

// claimSample is what the test saw of writer A at one moment: where its
// claim was, then (read after) its alloc's client status.
type claimSample struct {
	at           time.Time
	claim        string // taken, a release state, or gone
	clientStatus string
}

// TestProcess_StoppedWriterKeepsItsClaimUntilDead: writer A ignores SIGTERM
// (kill_timeout 15s) and writer B waits for the single-writer volume. On
// `job stop A` the claim stays taken until A's client reports the task
// dead; B is placed only after, and its first write comes after A's last.
func TestProcess_StoppedWriterKeepsItsClaimUntilDead(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	w := twoWriters(t, "15s", func(job string) string { return job })
	bin, s, a, pluginRoot := w.bin, w.s, w.a, w.pluginRoot

	// Sample A's claim, then its alloc, from the stop until B runs.
	var (
		mu      sync.Mutex
		samples []claimSample
		stopped = make(chan struct{})
	)
	go func() {
		for {
			select {
			case <-stopped:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var vol structs.CSIVolume
			var alloc structs.Allocation
			if fetchJSON(s.httpAddr()+"/v1/volume/csi/data", &vol) != nil {
				continue
			}
			sm := claimSample{at: time.Now(), claim: "gone"}
			if vol.WriteClaims[a[0].ID] != nil {
				sm.claim = "taken"
			} else if c := vol.PastClaims[a[0].ID]; c != nil {
				sm.claim = c.State.String()
			}
			if fetchJSON(s.httpAddr()+"/v1/allocation/"+a[0].ID, &alloc) != nil {
				continue
			}
			sm.clientStatus = alloc.ClientStatus
			mu.Lock()
			samples = append(samples, sm)
			mu.Unlock()
		}
	}()
	stop := time.Now()
	timedCLI(t, bin, s, "job", "stop", "a")
	waitUntil(t, 60*time.Second, "writer B running", func() bool { return len(running(jobAllocs(t, bin, s, "b"))) == 1 })
	close(stopped)
	t.Logf("figure: stop of A (kill_timeout 15s, SIGTERM ignored) to B running: %s", time.Since(stop).Round(time.Millisecond))

	mu.Lock()
	defer mu.Unlock()
	sawTaken := false
	for _, sm := range samples {
		if sm.claim == "taken" {
			sawTaken = true
			continue
		}
		// The claim moves in the write that records A dead on its client;
		// the alloc was read after the volume, so it must say so.
		must.True(t, sm.clientStatus == structs.AllocClientStatusComplete || sm.clientStatus == structs.AllocClientStatusFailed,
			must.Sprintf("A's claim was %s at %s while its client still said %q", sm.claim, sm.at.Sub(stop), sm.clientStatus))
	}
	must.True(t, sawTaken, must.Sprint("the claim was seen taken after the stop"))
	for _, sm := range samples {
		if sm.claim == "taken" && sm.at.Sub(stop) > 5*time.Second {
			break // still held well into A's kill timeout
		}
		if sm.claim != "taken" {
			t.Fatalf("A's claim left taken %s after the stop, inside its 15s kill timeout", sm.at.Sub(stop))
		}
	}

	// On the volume: every B line comes after every A line.
	waitUntil(t, 10*time.Second, "B's writes", func() bool { lastA, firstB := writes(t, pluginRoot); return lastA > 0 && firstB > 0 })
	lastA, firstB := writes(t, pluginRoot)
	must.Greater(t, lastA, firstB, must.Sprint("B's first write must follow A's last"))
	t.Logf("figure: A's last write to B's first: %s", time.Duration(firstB-lastA).Round(time.Millisecond))
}

// writes finds the volume's log under root and returns A's last and B's
// first write time, in unix nanoseconds (0 when none).
func writes(t *testing.T, root string) (lastA, firstB int64) {
	t.Helper()
	var path string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "log" {
			path = p
		}
		return nil
	})
	if path == "" {
		return 0, 0
	}
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		tag, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			continue
		}
		switch {
		case tag == "A" && n > lastA:
			lastA = n
		case tag == "B" && (firstB == 0 || n < firstB):
			firstB = n
		}
	}
	return lastA, firstB
}

// fetchJSON reads url into v; safe off the test's goroutine.
func fetchJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// pluginJSON reads a plugin (berth plugin status -json), nil if absent.
func pluginJSON(t *testing.T, bin string, a *agentProc, id string) *structs.CSIPlugin {
	t.Helper()
	out, _, code := berthCLI(t, bin, a, "plugin", "status", "-json", id)
	var p structs.CSIPlugin
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
		return nil
	}
	return &p
}
