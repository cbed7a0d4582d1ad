package main_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"

	"github.com/berth-csi/berth/structs"
)

// resourcesJob is a service job of one exec task with the resources
// block res, running script; it is neither restarted nor rescheduled.
func resourcesJob(id, res, script string) string {
	return fmt.Sprintf(`
job %q {
  group "g" {
    reschedule {
      attempts = 0
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        %s
      }
      restart {
        attempts = 0
        mode     = "fail"
      }
    }
  }
}
`, id, script, res)
}

// TestProcess_Resources: issue 26's resources, as a user meets them on a
// dev agent. A task with memory = 64 that takes 200 MiB is killed by the
// kernel, and `alloc status` says so; a group that does not fit is
// refused by `job run` with the node's figures; `node status` shows what
// is allocated of what the node offers.
func TestProcess_Resources(t *testing.T) {
	testlog.NeedRoot(t, "tasks' cgroups")
	bin, a := startDevAgent(t)
	nodes := nodeIDsByName(t, bin, a)
	must.MapLen(t, 1, nodes)
	var nodeName, nodeID string
	for n, id := range nodes {
		nodeName, nodeID = n, id
	}

	timedCLI(t, bin, a, "job", "run", writeSpec(t, "hog.hcl", resourcesJob("hog", "memory = 64",
		"echo started; head -c 200m /dev/zero | tail > /dev/null && echo survived; sleep 1")))
	var hog string
	waitUntil(t, 60*time.Second, "the hog's allocation failed", func() bool {
		for _, al := range jobAllocs(t, bin, a, "hog") {
			if al.ClientStatus == structs.AllocClientStatusFailed {
				hog = al.ID
				return true
			}
		}
		return false
	})
	out, _, code := berthCLI(t, bin, a, "alloc", "status", hog)
	must.Zero(t, code)
	must.StrContains(t, out, "OOM Killed")
	must.StrContains(t, out, "ran out of memory: the kernel killed it at its limit of 64 MiB")
	logs, _, _ := berthCLI(t, bin, a, "alloc", "logs", hog, "t")
	must.EqOp(t, "started\n", logs, must.Sprint("the task did not survive its limit"))

	timedCLI(t, bin, a, "job", "run", writeSpec(t, "db.hcl", resourcesJob("db", "memory = 256\n        cpu    = 300", "exec sleep 3600")))
	stdout, stderr, code := berthCLI(t, bin, a, "job", "run", writeSpec(t, "huge.hcl", resourcesJob("huge", "memory = 1000000", "exec sleep 3600")))
	must.NonZero(t, code, must.Sprint(stdout, stderr))
	want := regexp.MustCompile(fmt.Sprintf(`node %q: memory 256/\d+ MiB allocated, the group asks 1000000`, nodeName))
	must.True(t, want.MatchString(stdout), must.Sprintf("job run says why:\n%s\n%s", stdout, stderr))

	out, _, code = berthCLI(t, bin, a, "node", "status", nodeID)
	must.Zero(t, code)
	must.StrContains(t, out, "Allocated Resources")
	must.True(t, regexp.MustCompile(`Memory\s+256/\d+ MiB`).MatchString(out), must.Sprint(out))
	must.True(t, regexp.MustCompile(`CPU\s+300/\d+ MHz`).MatchString(out), must.Sprint(out))
	must.True(t, strings.Contains(out, "Cores"), must.Sprint(out))
}
