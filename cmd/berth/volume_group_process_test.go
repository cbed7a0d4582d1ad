package main_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// groupWriterJob runs one exec task as nobody (the default user) that
// tries to write the volume and says whether it could, then sleeps.
func groupWriterJob(id, volume, policy string) string {
	mountOptions := ""
	if policy != "" {
		mountOptions = fmt.Sprintf("\n      mount_options {\n        group_policy = %q\n      }", policy)
	}
	return fmt.Sprintf(`
job %q {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = %q
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"%s
    }
    task "t" {
      driver       = "exec"
      kill_timeout = "1s"
      config {
        command = "/bin/sh"
        args    = ["-c", "id -u; if echo hi > /data/by-nobody; then echo WROTE; else echo DENIED; fi; ls -lnd /data; exec sleep 3600"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`, id, volume, mountOptions)
}

// TestProcess_NonRootWriters: a task that runs as nobody writes to a
// volume of the csi-test mock, whose targets are root:root 0755 (the
// client gives the root to nobody's group, group_policy's default), and to
// one of berth-hostpath (which takes the group itself, VOLUME_MOUNT_GROUP);
// with group_policy = "none" the mock's volume stays root's, and the same
// writer is denied.
func TestProcess_NonRootWriters(t *testing.T) {
	testlog.NeedRoot(t, "tasks run as nobody in mount namespaces with bind mounts")
	mock := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	bin, a := startDevAgentWith(t, fmt.Sprintf("plugin \"mock\" {\n  type   = \"monolith\"\n  socket = %q\n}\n", mock.Socket))
	waitUntil(t, 30*time.Second, "the mock plugin healthy", func() bool {
		var p structs.CSIPlugin
		return fetchJSON(a.httpAddr()+"/v1/plugin/csi/mock", &p) == nil && p.NodesHealthy == 1
	})
	// mockvol prefers a zone: CreateVolume is told so.
	preferB := "topology_request {\n  preferred {\n    topology { segments = { zone = \"b\" } }\n  }\n}"
	for _, v := range []struct{ id, plugin, extra string }{{"mockvol", "mock", preferB}, {"mockvol2", "mock", ""}, {"hostvol", "hostpath", ""}} {
		spec := strings.Replace(volumeSpec(v.id, v.extra), `plugin_id = "hostpath"`, fmt.Sprintf("plugin_id = %q", v.plugin), 1)
		out, errOut, code := berthCLI(t, bin, a, "volume", "create", writeSpec(t, v.id+".hcl", spec))
		must.Zero(t, code, must.Sprintf("volume create %s: %s%s", v.id, out, errOut))
	}
	log, err := os.ReadFile(mock.LogPath)
	must.NoError(t, err)
	must.StrContains(t, string(log), `"accessibility_requirements":{"preferred":[{"segments":{"zone":"b"}}]}`)
	must.Eq(t, []*structs.CSITopology{{Segments: map[string]string{"zone": "b"}}}, statusJSON(t, bin, a, "mockvol").PreferredTopologies)

	logsOf := func(job string) string {
		t.Helper()
		var logs string
		waitUntil(t, 60*time.Second, "job "+job+" writes or is denied", func() bool {
			allocs := running(jobAllocs(t, bin, a, job))
			if len(allocs) != 1 {
				return false
			}
			logs, _, _ = berthCLI(t, bin, a, "alloc", "logs", allocs[0].ID, "t")
			return strings.Contains(logs, "WROTE") || strings.Contains(logs, "DENIED")
		})
		return logs
	}
	for _, tc := range []struct{ job, volume, policy, want, mode string }{
		{"on-mock", "mockvol", "", "WROTE", "drwxrwsr-x"},
		{"on-hostpath", "hostvol", "", "WROTE", "drwxrwsrwx"},
		{"on-mock-none", "mockvol2", "none", "DENIED", "drwxr-xr-x"},
	} {
		out, errOut, code := berthCLI(t, bin, a, "job", "run", "-detach", writeSpec(t, tc.job+".hcl", groupWriterJob(tc.job, tc.volume, tc.policy)))
		must.Zero(t, code, must.Sprintf("job run %s: %s%s", tc.job, out, errOut))
		logs := logsOf(tc.job)
		must.StrContains(t, logs, "65534\n", must.Sprintf("%s: the task runs as nobody:\n%s", tc.job, logs))
		must.StrContains(t, logs, tc.want, must.Sprintf("%s:\n%s", tc.job, logs))
		must.StrContains(t, logs, tc.mode, must.Sprintf("%s: the volume's root as the task sees it:\n%s", tc.job, logs))
	}
}
