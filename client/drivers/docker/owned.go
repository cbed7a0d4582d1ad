package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// Owned is a container berth started (it carries LabelAllocID).
type Owned struct {
	ContainerID string
	AllocID     string
	TaskName    string
	Running     bool
	// Labels are all the container's labels, berth's and the task's.
	Labels map[string]string
}

// Owned lists the engine's containers that carry berth's labels, running
// or not.
func (d *Driver) Owned(ctx context.Context) ([]Owned, error) {
	cs, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelAllocID))})
	if err != nil {
		return nil, fmt.Errorf("docker: list berth's containers: %w", err)
	}
	out := make([]Owned, 0, len(cs))
	for _, c := range cs {
		out = append(out, Owned{ContainerID: c.ID, AllocID: c.Labels[LabelAllocID], TaskName: c.Labels[LabelTask],
			Running: c.State == container.StateRunning, Labels: c.Labels})
	}
	return out, nil
}

// Remove force-removes a container (killing it if it runs) with its
// anonymous volumes; one already gone, or being removed, is no error.
func (d *Driver) Remove(ctx context.Context, containerID string) error {
	err := d.cli.ContainerRemove(ctx, containerID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	// A conflict on a forced removal is another removal in progress (the
	// engine's words: "removal of container ... is already in progress").
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker: remove container %s: %w", shortID(containerID), err)
	}
	return nil
}
