package main_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

// failingUnpublish makes the mock driver's ControllerUnpublishVolume fail
// once with UNAVAILABLE, then once with DEADLINE_EXCEEDED, then succeed.
const failingUnpublish = `globals: |
  unpublishes = 0;
controllerUnpublishVolumeStart: |
  unpublishes = unpublishes + 1;
  if (unpublishes == 1) { UNAVAILABLE; } else if (unpublishes == 2) { DEADLINEEXCEEDED; } else { OK; };
`

const nodeSecret = "node-secret-5d2e"

// TestProcess_ReleaseRetriesAndSurvivesLeaderLoss: with the csi-test mock
// driver failing ControllerUnpublishVolume (UNAVAILABLE, then
// DEADLINE_EXCEEDED), a stopped job's claim is retried with backoff, each
// failure checkpointed with its error; the leader is killed while the
// claim is mid-release, and the new leader finishes it once the fault
// clears.
func TestProcess_ReleaseRetriesAndSurvivesLeaderLoss(t *testing.T) {
	bin := buildBerth(t)
	mock := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: failingUnpublish, ExtraArgs: []string{"-v=5"}})
	servers, _ := threeServers(t, bin)
	startClientAgent(t, bin, servers, "mock", mock.Socket)
	s := servers[0]
	waitUntil(t, 30*time.Second, "the mock plugin healthy", func() bool {
		out, _, code := berthCLI(t, bin, s, "plugin", "status", "mock")
		return code == 0 && strings.Contains(out, "Nodes Healthy        = 1")
	})
	timedCLI(t, bin, s, "volume", "create", writeSpec(t, "vol.hcl", `
id        = "mockvol"
type      = "csi"
plugin_id = "mock"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets { token = "`+nodeSecret+`" }
`))
	timedCLI(t, bin, s, "job", "run", writeSpec(t, "job.hcl", `
job "user" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "mockvol"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["1000"]
      }
    }
  }
}
`))
	alloc := running(jobAllocs(t, bin, s, "user"))
	must.SliceLen(t, 1, alloc)

	// The volume's secrets reach the node calls (the mock logs requests
	// with them), and no berth log or reply holds them.
	for _, method := range []string{"NodeStageVolume", "NodePublishVolume"} {
		must.True(t, mock.Received(method, nodeSecret), must.Sprintf("the plugin received %s with the volume's secret", method))
	}
	out, stderr, code := berthCLI(t, bin, s, "volume", "status", "-json", "mockvol")
	must.Zero(t, code, must.Sprint(stderr))
	must.StrContains(t, out, `"mockvol"`)
	must.StrNotContains(t, out, nodeSecret)

	start := time.Now()
	timedCLI(t, bin, s, "job", "stop", "user")
	// Every checkpointed error, seen by polling the claim.
	errs := map[string]bool{}
	var claim *structs.CSIVolumeClaim
	waitUntil(t, 30*time.Second, "a failed controller detach checkpointed", func() bool {
		claim = statusJSON(t, bin, s, "mockvol").PastClaims[alloc[0].ID]
		if claim != nil && claim.LastError != "" {
			errs[claim.LastError] = true
		}
		return claim != nil && claim.Attempts > 0
	})
	must.EqOp(t, structs.CSIVolumeClaimStateNodeDetached, claim.State, must.Sprint("the node detach went through; the controller's fails"))
	must.True(t, claim.NextAttemptAt.After(claim.UpdatedAt), must.Sprint("a backoff before the next attempt"))

	// Kill the leader mid-release: the one leading now.
	leaderAddr := leaderOf(s)
	var rest []*agentProc
	for _, a := range servers {
		if a.rpcAddr() == leaderAddr {
			must.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
			_, _ = a.cmd.Process.Wait()
			continue
		}
		rest = append(rest, a)
	}
	must.SliceLen(t, 2, rest, must.Sprintf("the leader %s is one of the servers", leaderAddr))
	newLeader := waitLeader(t, rest, leaderAddr, 60*time.Second)
	t.Logf("leader %s killed; %s leads", leaderAddr, newLeader)

	waitUntil(t, 90*time.Second, "the claim freed by the new leader", func() bool {
		vol := statusJSON(t, bin, rest[0], "mockvol")
		if c := vol.PastClaims[alloc[0].ID]; c != nil {
			if c.State == structs.CSIVolumeClaimStateNodeDetached {
				// The count is in raft: the new leader goes on from it
				// (it starts again at 0 only when a step succeeds).
				must.GreaterEq(t, claim.Attempts, c.Attempts, must.Sprint("the new leader resumes the count"))
			}
			if c.LastError != "" {
				errs[c.LastError] = true
			}
			return false
		}
		return !vol.InUse()
	})
	t.Logf("figure: stop to freed through 2 failed controller detaches and a leader loss: %s", time.Since(start).Round(time.Millisecond))
	seen := fmt.Sprint(errs)
	must.StrContains(t, seen, "Unavailable", must.Sprint("the UNAVAILABLE failure was checkpointed"))
	must.StrContains(t, seen, "DeadlineExceeded", must.Sprint("the DEADLINE_EXCEEDED failure was checkpointed too"))
}
