package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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

// pidsRunning lists the pids of the processes under dir (clienttest.TasksUnder) whose
// command line holds bin.
func pidsRunning(dir, bin string) []int {
	var out []int
	for _, pid := range clienttest.TasksUnder(dir) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(b, []byte(bin)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestProcess_PluginKilledUnderAWriter: the plugin task serving writer A's
// volume is killed (SIGKILL) while A runs; A is stopped, and writer B,
// waiting for the volume, runs once the plugin task is back (restarted by
// its client), on its first try or by retry; no alloc of B fails for good
// and nothing of A stays mounted.
func TestProcess_PluginKilledUnderAWriter(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	// Restart the plugin task sooner than the default 15s; 5s still
	// outlasts A's stop, whose unmount then waits for the plugin.
	w := twoWriters(t, "1s", func(job string) string {
		return strings.Replace(job, `      csi_plugin {`, `      restart {
        attempts = 3
        delay    = "5s"
      }
      csi_plugin {`, 1)
	})
	bin, s, c1, a, pluginRoot, hostpath := w.bin, w.s, w.c1, w.a, w.pluginRoot, w.hostpath

	pids := pidsRunning(c1.dataDir, hostpath)
	must.SliceLen(t, 1, pids, must.Sprint("c1's plugin task"))
	must.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	killed := time.Now()
	timedCLI(t, bin, s, "job", "stop", "a")

	waitUntil(t, 90*time.Second, "writer B running", func() bool { return len(running(jobAllocs(t, bin, s, "b"))) == 1 })
	t.Logf("figure: plugin task killed to B running: %s", time.Since(killed).Round(time.Millisecond))
	for _, alloc := range jobAllocs(t, bin, s, "b") {
		must.NotEq(t, structs.AllocClientStatusFailed, alloc.ClientStatus, must.Sprintf("B's alloc %s failed", alloc.ID))
	}
	for _, mp := range mountsUnder(t, c1.dataDir) {
		must.StrNotContains(t, mp, a[0].ID, must.Sprint("nothing of A stays mounted on c1"))
	}
	waitUntil(t, 10*time.Second, "B's writes", func() bool { lastA, firstB := writes(t, pluginRoot); return lastA > 0 && firstB > 0 })
	lastA, firstB := writes(t, pluginRoot)
	must.Greater(t, lastA, firstB, must.Sprint("B's first write must follow A's last"))
}

// TestProcess_ReaderOnlyVolumeOverHTTP: a job sent as JSON over HTTP whose
// group would write a reader-only volume (ReadOnly false, as the API
// allows) is refused with a 400 naming read_only and nothing is placed;
// the same job as a reader runs, its volume mounted read-only.
func TestProcess_ReaderOnlyVolumeOverHTTP(t *testing.T) {
	testlog.NeedRoot(t, "tasks with volumes and plugin tasks run in mount namespaces with bind mounts")
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	servers, _ := threeServers(t, bin)
	s := servers[0]
	startWorkloadClient(t, bin, servers, "c1")
	readyNodes(t, bin, s, 1, 30*time.Second)
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, t.TempDir(), "hostpath")))
	waitUntil(t, 30*time.Second, "hostpath healthy", func() bool {
		p := pluginJSON(t, bin, s, "hostpath")
		return p != nil && p.NodesHealthy == 1
	})
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "ro.hcl",
		strings.Replace(volumeSpec("ro", ""), "single-node-writer", "single-node-reader-only", 1)))

	job := `{"Job": {"ID": "reader", "Type": "service", "TaskGroups": [{"Name": "g", "Count": 1,
  "Volumes": {"data": {"Type": "csi", "Source": "ro", "AccessMode": "single-node-reader-only",
    "AttachmentMode": "file-system", "ReadOnly": %s}},
  "Tasks": [{"Name": "t", "Driver": "exec",
    "Config": {"command": "/bin/sh", "args": ["-c", "touch /data/x 2>/dev/null && echo writable || echo read-only; exec sleep 1000"]},
    "VolumeMounts": [{"Volume": "data", "Destination": "/data"}]}]}]}}`
	put := func(readOnly string) (int, string) {
		req, err := http.NewRequest(http.MethodPut, s.httpAddr()+"/v1/jobs", strings.NewReader(fmt.Sprintf(job, readOnly)))
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := put("false")
	must.EqOp(t, http.StatusBadRequest, code, must.Sprint(body))
	var refusal struct{ Code, Message string }
	must.NoError(t, json.Unmarshal([]byte(body), &refusal))
	must.EqOp(t, "BadRequest", refusal.Code)
	must.StrContains(t, refusal.Message, "read_only")
	must.StrContains(t, refusal.Message, `source "ro"`)
	must.SliceEmpty(t, jobAllocs404(t, s, "reader"), must.Sprint("nothing placed"))

	code, body = put("true")
	must.EqOp(t, http.StatusOK, code, must.Sprint(body))
	waitUntil(t, 30*time.Second, "the reader running", func() bool { return len(running(jobAllocs(t, bin, s, "reader"))) == 1 })
	alloc := running(jobAllocs(t, bin, s, "reader"))[0]
	waitUntil(t, 10*time.Second, "the reader's output", func() bool {
		out, _, code := berthCLI(t, bin, s, "alloc", "logs", alloc.ID, "t")
		return code == 0 && strings.Contains(out, "read-only")
	})
}

// jobAllocs404 is jobAllocs for a job that may not exist: none then.
func jobAllocs404(t *testing.T, a *agentProc, job string) []*structs.AllocListStub {
	t.Helper()
	var allocs []*structs.AllocListStub
	if err := fetchJSON(a.httpAddr()+"/v1/job/"+job+"/allocations", &allocs); err != nil {
		must.StrContains(t, err.Error(), "404")
	}
	return allocs
}
