package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/internal/testlog"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.Cleanup()
	os.Exit(code)
}

// engine is the real engine with the berthdb image built for one test.
type engine struct {
	cli   *client.Client
	image string
}

// newEngine skips the test where there is no engine to use.
func newEngine(t *testing.T) *engine {
	t.Helper()
	cli := dockertest.Client(t)
	bin := dockertest.StaticBinary(t, "./testdata/berthdb")
	return &engine{cli: cli, image: dockertest.Image(t, cli, "berthdb", bin)}
}

// newDriver returns a driver of the local engine, closed when the test
// ends.
func newDriver(t *testing.T, cfg docker.Config) *docker.Driver {
	t.Helper()
	d, err := docker.New(cfg, testlog.Logger(t, "test"))
	must.NoError(t, err)
	t.Cleanup(func() { must.NoError(t, d.Close()) })
	return d
}

// taskConfig lays out an alloc in a temp dir and returns the config of a
// task running berthdb with the steps args, under a fresh alloc ID.
func taskConfig(t *testing.T, image string, args ...string) *docker.TaskConfig {
	t.Helper()
	root := t.TempDir()
	taskDir := filepath.Join(root, "db", "local")
	allocDir := filepath.Join(root, "alloc")
	must.NoError(t, os.MkdirAll(taskDir, 0o755))
	for _, d := range []string{"logs", "data", "tmp"} {
		must.NoError(t, os.MkdirAll(filepath.Join(allocDir, d), 0o755))
	}
	return &docker.TaskConfig{
		AllocID:    "a-" + dockertest.Unique(),
		JobID:      "shop",
		Namespace:  "default",
		Group:      "data",
		TaskName:   "db",
		NodeName:   "node-1",
		TaskDir:    taskDir,
		AllocDir:   allocDir,
		StdoutPath: filepath.Join(allocDir, "logs", "db.stdout.0"),
		StderrPath: filepath.Join(allocDir, "logs", "db.stderr.0"),
		LogRoot:    root,
		AllowRoot:  true, // the image's user is root: most tests are about other things
		Image:      image,
		Args:       args,
	}
}

// start starts the task; the test's cleanup kills and removes what is
// left of it.
func start(t *testing.T, d *docker.Driver, cfg *docker.TaskConfig) *docker.Handle {
	t.Helper()
	h, err := d.Start(t.Context(), cfg)
	must.NoError(t, err)
	t.Cleanup(func() { removeContainer(t, d, h.ContainerID()) })
	return h
}

// removeContainer removes a container the test may have left.
func removeContainer(t *testing.T, d *docker.Driver, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	must.NoError(t, d.Remove(ctx, id))
}

func waitDone(t *testing.T, h *docker.Handle) docker.ExitResult {
	t.Helper()
	select {
	case <-h.Done():
		return h.Result()
	case <-time.After(60 * time.Second):
		t.Fatalf("container %s did not exit", h.ContainerID())
	}
	return docker.ExitResult{}
}

func stop(t *testing.T, h *docker.Handle, sig syscall.Signal, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	must.NoError(t, h.Stop(ctx, sig, timeout))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	return string(b)
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(cond), wait.Timeout(30*time.Second), wait.Gap(20*time.Millisecond)),
		must.Sprintf("%s never happened", what))
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	waitFor(t, path+" created", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// waitLog waits until the file holds want.
func waitLog(t *testing.T, path, want string) {
	t.Helper()
	waitFor(t, path+" holding "+want, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want)
	})
}

// touch creates a file on the host (a step the task waits for).
func touch(t *testing.T, path string) {
	t.Helper()
	must.NoError(t, os.WriteFile(path, nil, 0o644))
}

// owned is the driver's record of one container, if it lists it.
func owned(t *testing.T, d *docker.Driver, id string) (docker.Owned, bool) {
	t.Helper()
	all, err := d.Owned(t.Context())
	must.NoError(t, err)
	for _, o := range all {
		if o.ContainerID == id {
			return o, true
		}
	}
	return docker.Owned{}, false
}

// ownedByAlloc is a container of the alloc berth owns, if there is one.
func ownedByAlloc(t *testing.T, d *docker.Driver, allocID string) (docker.Owned, bool) {
	t.Helper()
	all, err := d.Owned(t.Context())
	must.NoError(t, err)
	for _, o := range all {
		if o.AllocID == allocID {
			return o, true
		}
	}
	return docker.Owned{}, false
}
