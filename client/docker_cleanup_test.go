package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestClient_RemovesStrayContainers: once settled, a client removes the
// containers of its tasks that no allocation here accounts for, and
// leaves another client's (its logs elsewhere) alone.
func TestClient_RemovesStrayContainers(t *testing.T) {
	cli := dockertest.Client(t)
	image := dockertest.Image(t, cli, "berthdb", dockertest.StaticBinary(t, "./drivers/docker/testdata/berthdb"))
	d, err := docker.New(docker.DefaultConfig(), testlog.Logger(t, "docker"))
	must.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start := func(dir string) (string, string) {
		allocID := structs.NewUUID()
		for _, sub := range []string{"task", "alloc/data", "alloc/tmp"} {
			must.NoError(t, os.MkdirAll(filepath.Join(dir, allocID, sub), 0o755))
		}
		h, err := d.Start(ctx, &docker.TaskConfig{AllocID: allocID, JobID: "j", Namespace: "default", Group: "g", TaskName: "web",
			NodeName: "n", TaskDir: filepath.Join(dir, allocID, "task"), AllocDir: filepath.Join(dir, allocID, "alloc"),
			StdoutPath: filepath.Join(dir, allocID, "out"), StderrPath: filepath.Join(dir, allocID, "err"),
			Image: image, Args: []string{"block"}, User: "65534"})
		must.NoError(t, err)
		t.Cleanup(func() { _ = d.Remove(context.Background(), h.ContainerID()) })
		return allocID, h.ContainerID()
	}
	dataDir := t.TempDir()
	strayAlloc, stray := start(filepath.Join(dataDir, "leftover"))
	_, foreign := start(t.TempDir())

	f := startFakeServers(t)
	startClient(t, f, dataDir, nil)
	owns := func(id string) bool {
		owned, err := d.Owned(ctx)
		must.NoError(t, err)
		for _, o := range owned {
			if o.ContainerID == id {
				return true
			}
		}
		return false
	}
	waitUntil(t, "the stray container of alloc "+strayAlloc+" removed", func() bool { return !owns(stray) })
	must.True(t, owns(foreign), must.Sprint("another client's container is left alone"))
}
