package main_test

import (
	"context"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
	"github.com/berth-csi/berth/internal/testlog"
)

// readmeImages are the images the README's "Plugins as containers" builds.
var readmeImages = []string{"berth-example/hostpath:1", "berth-example/busybox:1"}

// runContainers runs "Plugins as containers" where a Docker engine
// answers, and says why it does not where none does.
func (w *readmeWalk) runContainers() {
	cli, err := dockertest.Reachable(w.t.Context())
	if err != nil {
		if testlog.Strict() {
			w.t.Fatalf("README: \"Plugins as containers\" cannot run (%s set): %v", testlog.StrictEnv, err)
		}
		w.t.Logf("README: \"Plugins as containers\" skipped: %v", err)
		return
	}
	w.docker = cli
	w.run("Plugins as containers")
}

// removeDocker force-removes the containers the walk's clients left and
// the images it built; cleanup calls it once the clients have stopped, so
// that none starts another.
func (w *readmeWalk) removeDocker() {
	if w.docker == nil {
		return
	}
	defer func() { _ = w.docker.Close() }()
	removeContainersUnder(w.t, w.docker, w.dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, img := range readmeImages {
		if _, err := w.docker.ImageRemove(ctx, img, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			w.t.Logf("remove image %s: %v", img, err)
		}
	}
}
