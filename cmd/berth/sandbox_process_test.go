package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"

	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/structs"
)

// oneServer starts a single server agent process that leads alone.
func oneServer(t *testing.T, bin string) *agentProc {
	t.Helper()
	ports := testlog.FreePorts(t, "127.0.0.1", 3)
	s := &agentProc{name: "s0", dataDir: t.TempDir(), httpPort: ports[0], rpcPort: ports[1], serfPort: ports[2]}
	startAgent(t, bin, s, "", "-bootstrap-expect", "1")
	waitLeader(t, []*agentProc{s}, "", 60*time.Second)
	return s
}

// hostTargets are what an attacking task's links point at: a root-only
// file (a host secret) and a root-owned dir (/usr/local/bin, from which
// the README's plugin job runs a binary as root), both fresh, with what
// they were when made.
type hostTargets struct {
	secret, dir string
}

func newHostTargets(t *testing.T) hostTargets {
	t.Helper()
	base := t.TempDir()
	must.NoError(t, os.Chmod(base, 0o755))
	h := hostTargets{secret: filepath.Join(base, "shadow"), dir: filepath.Join(base, "usr-local-bin")}
	must.NoError(t, os.WriteFile(h.secret, []byte("root:host-secret-hash\n"), 0o600))
	must.NoError(t, os.Mkdir(h.dir, 0o755))
	return h
}

// unchanged checks the targets are as made: the secret's bytes and mode,
// the dir's owner, mode and (empty) contents.
func (h hostTargets) unchanged(t *testing.T, when string) {
	t.Helper()
	b, err := os.ReadFile(h.secret)
	must.NoError(t, err)
	must.EqOp(t, "root:host-secret-hash\n", string(b), must.Sprintf("%s: the host secret was written", when))
	fi, err := os.Stat(h.secret)
	must.NoError(t, err)
	must.EqOp(t, os.FileMode(0o600), fi.Mode().Perm(), must.Sprintf("%s: the host secret's mode changed", when))
	fi, err = os.Stat(h.dir)
	must.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	must.EqOp(t, uint32(0), st.Uid, must.Sprintf("%s: the host dir's owner changed to %d", when, st.Uid))
	must.EqOp(t, uint32(0), st.Gid, must.Sprintf("%s: the host dir's group changed to %d", when, st.Gid))
	must.EqOp(t, os.FileMode(0o755), fi.Mode().Perm(), must.Sprintf("%s: the host dir's mode changed", when))
	entries, err := os.ReadDir(h.dir)
	must.NoError(t, err)
	must.SliceEmpty(t, entries, must.Sprintf("%s: something was made in the host dir", when))
}

// attackJob is a service job of one task that plants links in place of
// its log files and of its local/ dir, says "planted", and runs on. It is
// never rescheduled: a run of the job places the next attempt.
func attackJob(id, task string) string {
	return fmt.Sprintf(`
job %q {
  type = "service"
  group "g" {
    reschedule {
      attempts = 0
    }
    task "t" {
%s
    }
  }
}
`, id, task)
}

// failedFor waits for an allocation of the job that failed with a
// description holding every one of parts, and returns it.
func failedFor(t *testing.T, bin string, s *agentProc, job string, parts ...string) *structs.Allocation {
	t.Helper()
	var found *structs.Allocation
	waitUntil(t, 60*time.Second, "an allocation of "+job+" failed, saying "+strings.Join(parts, " and "), func() bool {
		for _, stub := range jobAllocs(t, bin, s, job) {
			if stub.ClientStatus != structs.AllocClientStatusFailed {
				continue
			}
			var a structs.Allocation
			getJSON(t, s.httpAddr()+"/v1/allocation/"+stub.ID, &a)
			all := true
			for _, p := range parts {
				all = all && strings.Contains(a.ClientDescription, p)
			}
			if all {
				found = &a
				return true
			}
		}
		return false
	})
	return found
}

// runningPlanted runs the job and waits for its new allocation to run and
// say in its log that it planted its links.
func runningPlanted(t *testing.T, bin string, s *agentProc, job, spec string) string {
	t.Helper()
	before := map[string]bool{}
	for _, a := range jobAllocs(t, bin, s, job) {
		before[a.ID] = true
	}
	timedCLI(t, bin, s, "job", "run", spec)
	var id string
	waitUntil(t, 60*time.Second, "a new allocation of "+job+" planted its links", func() bool {
		for _, a := range jobAllocs(t, bin, s, job) {
			if before[a.ID] || a.ClientStatus != structs.AllocClientStatusRunning {
				continue
			}
			out, _, _ := berthCLI(t, bin, s, "alloc", "logs", a.ID, "t")
			if strings.Contains(out, "planted") {
				id = a.ID
				return true
			}
		}
		return false
	})
	return id
}

// TestProcess_Sandbox_ExecTaskPlantsLinks: issue 26's escalation of an exec
// task, as written. A task running as nobody (the default user; the client
// allows root tasks only for its plugins) owns its task dir: it replaces
// local/ with a link to a root-owned host dir and tries its log files
// too. Across two client agent restarts the client never follows the
// link: the host dir keeps its owner, mode and emptiness, the root-only
// file is neither read by `alloc logs` nor written, and each restored
// allocation fails with a description that names the entry.
func TestProcess_Sandbox_ExecTaskPlantsLinks(t *testing.T) {
	testlog.NeedRoot(t, "tasks run as nobody, and the client chowns their dirs")
	bin := buildBerth(t)
	s := oneServer(t, bin)
	c1 := startWorkloadClient(t, bin, []*agentProc{s}, "c1")
	readyNodes(t, bin, s, 1, 30*time.Second)
	host := newHostTargets(t)

	spec := writeSpec(t, "attack.hcl", attackJob("attack", fmt.Sprintf(`      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "ln -sf %[1]s ../alloc/logs/t.stdout.0; ln -sf %[1]s ../alloc/logs/t.stderr.0; rm -rf local && ln -s %[2]s local && echo planted; exec sleep 3600"]
      }`, host.secret, host.dir)))
	for restart := 1; restart <= 2; restart++ {
		id := runningPlanted(t, bin, s, "attack", spec)
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", id, "t")
		must.StrNotContains(t, out, "host-secret", must.Sprint("alloc logs printed the host file"))
		host.unchanged(t, "before restart "+strconv.Itoa(restart))

		c1.signal(syscall.SIGTERM)
		c1.start()
		a := failedFor(t, bin, s, "attack", filepath.Join(id, "t", "local"), "a symbolic link is there")
		must.EqOp(t, id, a.ID)
		host.unchanged(t, "after restart "+strconv.Itoa(restart))
	}
}

// TestProcess_Sandbox_DockerTaskPlantsLinks: issue 26's escalation of a
// docker task, as written, by a container running as root (the client
// allows root tasks, the strongest attacker this test can be). It
// replaces its log files with links to a root-only host file (its logs
// are not in the container at all now) and its task dir's local/ with a
// link to a root-owned host dir. `alloc logs` prints no byte of the host
// file, and across two client agent restarts the container's output is
// never appended to it, the dir keeps its owner, and each restored
// allocation fails naming the entry.
func TestProcess_Sandbox_DockerTaskPlantsLinks(t *testing.T) {
	cli := dockertest.Client(t) // skips, saying why, without root or an engine
	image := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "../../client/drivers/docker/testdata/berthdb"))
	bin := buildBerth(t)
	s := oneServer(t, bin)
	c1 := startWorkloadClient(t, bin, []*agentProc{s}, "c1")
	t.Cleanup(func() { removeContainersUnder(t, cli, c1.dataDir) })
	readyNodes(t, bin, s, 1, 30*time.Second)
	waitDockerHealthy(t, bin, s, "c1")
	host := newHostTargets(t)

	spec := writeSpec(t, "attack.hcl", attackJob("attack", fmt.Sprintf(`      driver = "docker"
      config {
        image = %q
        args  = ["link:%[2]s:/berth/alloc/logs/t.stdout.0", "link:%[2]s:/berth/alloc/logs/t.stderr.0",
                 "link:%[3]s:/berth/local/local", "print:planted", "trap", "block"]
      }`, image, host.secret, host.dir)))
	for restart := 1; restart <= 2; restart++ {
		id := runningPlanted(t, bin, s, "attack", spec)
		out, _, _ := berthCLI(t, bin, s, "alloc", "logs", id, "t")
		must.StrNotContains(t, out, "host-secret", must.Sprint("alloc logs printed the host file"))
		must.StrContains(t, out, "link /berth/alloc/logs/t.stdout.0: symlink", must.Sprint("the logs are not in the container"))
		host.unchanged(t, "before restart "+strconv.Itoa(restart))
		// A setuid file or a device node the container leaves in its
		// dirs is neither on the host: they are nosuid and nodev there.
		var st syscall.Statfs_t
		must.NoError(t, syscall.Statfs(filepath.Join(c1.dataDir, "alloc", id, "t"), &st))
		must.EqOp(t, int64(0x2|0x4), st.Flags&(0x2|0x4), must.Sprint("ST_NOSUID and ST_NODEV under the alloc dirs"))

		c1.signal(syscall.SIGTERM)
		c1.start()
		a := failedFor(t, bin, s, "attack", filepath.Join(id, "t", "local"), "a symbolic link is there")
		must.EqOp(t, id, a.ID)
		out, _, _ = berthCLI(t, bin, s, "alloc", "logs", id, "t")
		must.StrNotContains(t, out, "host-secret")
		host.unchanged(t, "after restart "+strconv.Itoa(restart))
	}
}

// waitDockerHealthy waits until the node's docker driver is healthy.
func waitDockerHealthy(t *testing.T, bin string, s *agentProc, node string) {
	t.Helper()
	id := nodeIDsByName(t, bin, s)[node]
	waitUntil(t, 30*time.Second, node+"'s docker driver healthy", func() bool {
		var n *structs.Node
		getJSON(t, s.httpAddr()+"/v1/node/"+id, &n)
		return n != nil && n.Drivers[structs.DriverDocker] != nil && n.Drivers[structs.DriverDocker].Healthy
	})
}
