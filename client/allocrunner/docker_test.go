package allocrunner

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// dockerHarness is a harness whose runners have a docker driver, and the
// image of the test "db" (client/drivers/docker/testdata/berthdb); it
// skips, saying why, where no engine answers.
func dockerHarness(t *testing.T) (*harness, string) {
	cli := dockertest.Client(t)
	image := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "../drivers/docker/testdata/berthdb"))
	h := newHarness(t)
	h.docker = newDockerDriver(t)
	return h, image
}

func newDockerDriver(t *testing.T) *docker.Driver {
	d, err := docker.New(docker.DefaultConfig(), testlog.Logger(t, "docker"))
	must.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func dockerTask(name, image string, args ...string) *structs.Task {
	t := shTask(name, "")
	t.Driver = structs.DriverDocker
	t.Config = map[string]any{"image": image, "args": args}
	return t
}

// TestRunner_Docker_BatchTask: a docker task runs to its end; its output
// is in the task's log files, its environment names the alloc, and its
// container is gone once the alloc is done.
func TestRunner_Docker_BatchTask(t *testing.T) {
	h, image := dockerHarness(t)
	a := testAlloc(structs.JobTypeBatch, dockerTask("web", image, "print:hello from a container", "env:BERTH_ALLOC_ID"))
	r := h.runner(a)
	waitRunner(t, r)

	got := r.Alloc()
	must.EqOp(t, structs.AllocClientStatusComplete, got.ClientStatus, must.Sprint(got.ClientDescription))
	started := eventMessages(got.TaskStates["web"], EventStarted)
	must.SliceLen(t, 1, started)
	must.StrHasPrefix(t, "container ", started[0])
	must.Eq(t, []string{"exit code 0"}, eventMessages(got.TaskStates["web"], EventTerminated))
	out, err := os.ReadFile(LogPath(r.allocDir, "web", LogStdout))
	must.NoError(t, err)
	must.StrContains(t, string(out), "hello from a container\n")
	must.StrContains(t, string(out), "BERTH_ALLOC_ID="+a.ID+"\n")
	must.SliceEmpty(t, ownedBy(t, h.docker, a.ID), must.Sprint("the container is removed"))
}

// TestRunner_Docker_StopAndReattach: a client that stops leaves a docker
// task running; the next runner reattaches to its container (no second
// start), and a stop the servers ask for then kills it with its signal.
func TestRunner_Docker_StopAndReattach(t *testing.T) {
	h, image := dockerHarness(t)
	task := dockerTask("web", image, "print:ready", "trap", "block")
	a := testAlloc(structs.JobTypeService, task)
	r1 := h.runner(a)
	waitFor(t, func() bool { return len(eventMessages(r1.Alloc().TaskStates["web"], EventStarted)) == 1 })
	waitFor(t, func() bool {
		b, _ := os.ReadFile(LogPath(r1.allocDir, "web", LogStdout))
		return strings.Contains(string(b), "ready")
	})
	hs, ok := r1.state.handle("web")
	must.True(t, ok)
	must.EqOp(t, structs.DriverDocker, hs.Driver)
	r1.Shutdown() // the client stops: the container runs on
	waitRunner(t, r1)
	must.NoError(t, h.docker.Close()) // and its driver with it, as with the client's process
	h.docker = newDockerDriver(t)     // the restarted client's
	owned := ownedBy(t, h.docker, a.ID)
	must.SliceLen(t, 1, owned)
	must.True(t, owned[0].Running)
	must.EqOp(t, hs.ContainerID, owned[0].ContainerID)

	// The servers send the alloc back with the task states they have.
	restored := a.Copy()
	restored.ClientStatus = structs.AllocClientStatusRunning
	restored.TaskStates = r1.Alloc().TaskStates
	r2 := h.runner(restored)
	waitFor(t, func() bool { return r2.Alloc().ClientStatus == structs.AllocClientStatusRunning })
	hs2, ok := r2.state.handle("web")
	must.True(t, ok)
	must.EqOp(t, hs.ContainerID, hs2.ContainerID, must.Sprint("reattached, not started again"))
	must.SliceLen(t, 1, eventMessages(r2.Alloc().TaskStates["web"], EventStarted))
	stopped := restored.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	r2.Update(stopped)
	waitRunner(t, r2)
	got := r2.Alloc()
	must.EqOp(t, structs.AllocClientStatusComplete, got.ClientStatus, must.Sprint(got.ClientDescription))
	must.Eq(t, []string{"exit code 0"}, eventMessages(got.TaskStates["web"], EventKilled), must.Sprint("it trapped SIGTERM and exited"))
	left := ownedBy(t, h.docker, a.ID)
	must.SliceEmpty(t, left, must.Sprintf("%+v, handle %+v", left, hs2))
}

// TestRunner_Docker_MissingImageFails: a task whose image is not on the
// node fails at once (no restarts), saying so.
func TestRunner_Docker_MissingImageFails(t *testing.T) {
	h, _ := dockerHarness(t)
	task := dockerTask("web", "berth-test/not-built:"+dockertest.Unique())
	task.Restart = &structs.RestartPolicy{Attempts: 3, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartModeFail}
	r := h.runner(testAlloc(structs.JobTypeService, task))
	waitFor(t, func() bool { return r.Alloc().ClientStatus == structs.AllocClientStatusFailed })
	msgs := eventMessages(r.Alloc().TaskStates["web"], EventDriverFailure)
	must.SliceLen(t, 1, msgs, must.Sprint("no restart: a missing image stays missing"))
	must.StrContains(t, msgs[0], "not present on node node-1; build or pull it")
}

func ownedBy(t *testing.T, d *docker.Driver, allocID string) []docker.Owned {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := d.Owned(ctx)
	must.NoError(t, err)
	var out []docker.Owned
	for _, o := range all {
		if o.AllocID == allocID {
			out = append(out, o)
		}
	}
	return out
}
