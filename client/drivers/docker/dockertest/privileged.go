package dockertest

import (
	"context"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// CanRunPrivileged reports whether the engine starts a privileged
// container of image (it is started with args and removed at once), and
// when it does not, the engine's reason. An engine that runs with a
// reduced capability bounding set (inside another container, as on some
// CI machines) cannot grant every capability, which privileged asks for.
func CanRunPrivileged(t testing.TB, cli *client.Client, image string, args ...string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: args, Labels: map[string]string{"berth-test": "true"}},
		&container.HostConfig{Privileged: true, NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatalf("create a privileged container of %s: %v", image, err)
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(t.Context()), timeout)
		defer rcancel()
		if err := cli.ContainerRemove(rctx, created.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Logf("remove the privileged probe %s: %v", created.ID, err)
		}
	}()
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return false, err.Error()
	}
	return true, ""
}
