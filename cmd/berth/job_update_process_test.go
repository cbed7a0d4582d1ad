package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

// taggedWriter is a service job whose task appends "<tag> <unix nanos>" to
// /data/log every 50 ms on a single-node-writer volume, and exits on
// SIGTERM; min_healthy_time is short, so the test does not wait 10 s.
func taggedWriter(id, tag string) string {
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
    update {
      min_healthy_time = "1s"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'exit 0' TERM; while :; do echo \"%s $(date +%%s%%N)\" >> /data/log; sleep 0.05; done"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`, id, tag)
}

// TestProcess_JobUpdate_SingleWriter: on three server processes and a
// client running berth-hostpath, a changed writer job on a
// single-node-writer volume is replaced with its old allocation stopped
// and its claim freed before the new one runs: the log never has the new
// writer's line before the old one's last. plan, history and revert work
// on it. The gap with no writer is the figure.
func TestProcess_JobUpdate_SingleWriter(t *testing.T) {
	bin := buildBerth(t)
	hostpath := csitest.HostpathBinary(t)
	pluginRoot := t.TempDir()
	servers, _ := threeServers(t, bin)
	s := servers[0]
	startWorkloadClient(t, bin, servers, "c1")
	readyNodes(t, bin, s, 1, 30*time.Second)
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "plugin.hcl", csitest.HostpathPluginJob(hostpath, pluginRoot, "hostpath")))
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", "")))

	v0 := writeSpec(t, "v0.hcl", taggedWriter("writer", "A"))
	timedCLI(t, bin, s, "job", "run", v0)
	waitUntil(t, 10*time.Second, "writer A writing", func() bool { lastA, _ := writes(t, pluginRoot); return lastA > 0 })

	v1 := writeSpec(t, "v1.hcl", taggedWriter("writer", "B"))
	out, _, code := berthCLI(t, bin, s, "job", "plan", v1)
	must.EqOp(t, 2, code, must.Sprintf("a change is exit status 2:\n%s", out))
	must.StrContains(t, out, `Job "writer": spec changed, version 0 -> 1`)
	must.StrContains(t, out, `Group "g": 1 to replace now`)
	must.StrContains(t, out, `Group "g": 1 allocation waits for the one it replaces to stop and free its claims`)

	out = timedCLI(t, bin, s, "job", "run", v1)
	t.Logf("job run v1:\n%s", out)
	must.StrContains(t, out, `==> Job "writer" version 1: replacing its allocations`)
	must.StrContains(t, out, `(version 0): stopping`)
	must.StrContains(t, out, `==> Job "writer": version 1, 1 allocation running`)
	var lastA, firstB int64
	waitUntil(t, 10*time.Second, "writer B writing", func() bool { lastA, firstB = writes(t, pluginRoot); return firstB > 0 })
	must.Greater(t, lastA, firstB, must.Sprint("the new writer starts after the old one's last write: never two writers"))
	t.Logf("figure: single-writer update, time with no writer: %s", time.Duration(firstB-lastA).Round(time.Millisecond))

	out = timedCLI(t, bin, s, "job", "history", "writer")
	must.StrContains(t, out, "Version")
	must.EqOp(t, 2, strings.Count(out, "g x1"), must.Sprintf("two versions:\n%s", out))

	out = timedCLI(t, bin, s, "job", "revert", "writer", "0")
	must.StrContains(t, out, `==> Job "writer" reverted to version 0's spec, as version 2`)
	must.StrContains(t, out, `==> Job "writer": version 2, 1 allocation running`)
	allocs := running(jobAllocs(t, bin, s, "writer"))
	must.SliceLen(t, 1, allocs)
	must.EqOp(t, uint64(2), allocs[0].JobVersion)

	_, stderr, code := berthCLI(t, bin, s, "job", "revert", "writer", "7")
	must.EqOp(t, 1, code)
	must.StrContains(t, stderr, `job "writer" has no version 7 kept; its versions are 2, 1 and 0`)
}

// TestProcess_Reschedule: an allocation whose task fails for good is
// replaced by the leader after its reschedule delay, as often as its
// policy allows; alloc status says what the last one replaces and that no
// attempt is left.
func TestProcess_Reschedule(t *testing.T) {
	bin := buildBerth(t)
	servers, _ := threeServers(t, bin)
	s := servers[0]
	startWorkloadClient(t, bin, servers, "c1")
	readyNodes(t, bin, s, 1, 30*time.Second)
	const delay = time.Second // the policy's, constant
	spec := writeSpec(t, "failing.hcl", `
job "failing" {
  type = "service"
  group "g" {
    reschedule {
      attempts       = 2
      interval       = "1h"
      delay          = "`+delay.String()+`"
      delay_function = "constant"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exit 3"]
      }
      restart {
        attempts = 0
        mode     = "fail"
      }
    }
  }
}
`)
	// Its exit status depends on whether it saw the task running before
	// it exited; the allocations tell.
	berthCLI(t, bin, s, "job", "run", spec)
	var allocs []*structs.AllocListStub
	waitUntil(t, 30*time.Second, "the original and 2 replacements, all failed", func() bool {
		allocs = jobAllocs(t, bin, s, "failing")
		failed := 0
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusFailed {
				failed++
			}
		}
		return failed == 3
	})
	must.SliceLen(t, 3, allocs, must.Sprint("no more than the policy's 2 attempts"))
	// A wrongful fourth would come one reschedule delay after the third
	// failed (the leader marks no decision not to replace it): watch over
	// three delays from here that none comes.
	must.Wait(t, wait.ContinualSuccess(wait.BoolFunc(func() bool {
		allocs = jobAllocs(t, bin, s, "failing")
		return len(allocs) == 3
	}), wait.Timeout(3*delay), wait.Gap(100*time.Millisecond)),
		must.Sprint("no fourth allocation within 3 reschedule delays of the third failure: the policy allows 2 attempts"))
	newest := allocs[0]
	for _, a := range allocs {
		if a.CreateIndex > newest.CreateIndex {
			newest = a
		}
	}
	out := timedCLI(t, bin, s, "alloc", "status", newest.ID)
	must.StrContains(t, out, "Reschedule Attempts = 2 (policy: 2 in 1h0m0s)")
	must.StrContains(t, out, "Next Reschedule     = none: its reschedule policy (2 in 1h0m0s) is used up")
	must.StrContains(t, out, "Replaces            = ")
}
