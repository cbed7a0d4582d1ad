package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/hashicorp/go-hclog"
)

// removeTimeout bounds the removal of a container that failed to start.
var removeTimeout = 30 * time.Second

// Start starts the task's container and returns once it runs, or with the
// reason it could not: a bad config, a missing image, a mount or a
// command the engine refused.
func (d *Driver) Start(ctx context.Context, cfg *TaskConfig) (*Handle, error) {
	s, err := cfg.resolve(d.cfg)
	if err != nil {
		return nil, err
	}
	if err := d.ctx.Err(); err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.TaskName, ErrClosed)
	}
	if err := d.ensureImage(ctx, cfg); err != nil {
		return nil, err
	}
	if err := d.refuseRootEarly(ctx, cfg); err != nil {
		return nil, err
	}
	logs := cfg.logFiles()
	if err := logs.touch(); err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.TaskName, err)
	}
	if err := d.removeLeftover(ctx, cfg, s.name); err != nil {
		return nil, err
	}

	created, err := d.cli.ContainerCreate(ctx, &container.Config{
		Image:      cfg.Image,
		Cmd:        s.cmd,
		Entrypoint: s.entry,
		Env:        s.env,
		Labels:     s.labels,
		User:       cfg.User,
		WorkingDir: TaskMountPoint,
	}, &container.HostConfig{
		Privileged:  cfg.Privileged,
		CapAdd:      s.capAdd,
		CapDrop:     s.capDrop,
		NetworkMode: container.NetworkMode(s.network),
		Mounts:      s.mounts,
		LogConfig:   container.LogConfig{Type: "local"},
		Resources: container.Resources{Devices: s.devices, DeviceCgroupRules: s.rules, CPUShares: cfg.Resources.CPUShares, CpusetCpus: cfg.Resources.Cpuset,
			Memory: cfg.Resources.MemoryBytes, MemoryReservation: cfg.Resources.MemoryReservationBytes},
	}, nil, nil, s.name)
	if err != nil {
		return nil, fmt.Errorf("task %q: create container %s from image %s: %w", cfg.TaskName, s.name, cfg.Image, err)
	}
	id := created.ID
	log := d.logger.With("task", cfg.TaskName, "alloc_id", cfg.AllocID, "container_id", shortID(id))
	for _, w := range created.Warnings {
		log.Warn("engine warning on create", "warning", w)
	}
	if err := d.checkUser(ctx, cfg, id); err != nil {
		d.removeCreated(ctx, id, log)
		return nil, err
	}

	h := newHandle(d, HandleState{TaskName: cfg.TaskName, ContainerID: id}, logs, log)
	// The wait is registered before the start, so an exit however quick
	// is seen; it lives as long as the handle.
	hctx, cancel := context.WithCancel(d.ctx)
	waitC, errC := d.cli.ContainerWait(hctx, id, container.WaitConditionNextExit)
	err = d.cli.ContainerStart(ctx, id, container.StartOptions{})
	if err == nil {
		err = d.goHandle(func() {
			defer cancel()
			h.run(hctx, waitC, errC, time.Time{})
		})
		if err == nil {
			log.Debug("container started", "name", s.name, "image", cfg.Image)
			return h, nil
		}
	}
	cancel()
	drainWait(waitC, errC)
	d.removeCreated(ctx, id, log)
	return nil, fmt.Errorf("task %q: start container %s (image %s): %w%s", cfg.TaskName, s.name, cfg.Image, err, startHint(cfg, err))
}

// removeCreated removes a container that was created but is not to run,
// even when ctx has ended: a created container must not stay.
func (d *Driver) removeCreated(ctx context.Context, id string, log hclog.Logger) {
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer rcancel()
	if err := d.Remove(rctx, id); err != nil {
		log.Warn("could not remove a container that is not to run", "error", err)
	}
}

// ensureImage checks the task's image is on the node, pulling it first
// when the task asks to.
func (d *Driver) ensureImage(ctx context.Context, cfg *TaskConfig) error {
	if cfg.ForcePull {
		if err := d.pull(ctx, cfg.Image); err != nil {
			return fmt.Errorf("task %q: pull image %s: %w", cfg.TaskName, cfg.Image, err)
		}
	}
	_, err := d.cli.ImageInspect(ctx, cfg.Image)
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: task %q: image %s is not present on node %s; build or pull it (or set force_pull in the task's config)",
			ErrImageMissing, cfg.TaskName, cfg.Image, cfg.nodeName())
	case err != nil:
		return fmt.Errorf("task %q: inspect image %s: %w", cfg.TaskName, cfg.Image, err)
	}
	return nil
}

// pull pulls ref, reading the engine's progress stream to its end: a
// failed pull is reported in the stream, not in the response's status.
func (d *Driver) pull(ctx context.Context, ref string) error {
	rc, err := d.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return streamError(rc)
}

// streamError reads a JSON message stream of the engine (a pull's or a
// build's progress) to its end and returns the error it reports, if any.
func streamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the engine's progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// removeLeftover removes a container of this task and alloc left under
// the name by a start that crashed; a container of anything else under
// the name is refused.
func (d *Driver) removeLeftover(ctx context.Context, cfg *TaskConfig, name string) error {
	c, err := d.cli.ContainerInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task %q: inspect container %s: %w", cfg.TaskName, name, err)
	}
	var labels map[string]string
	if c.Config != nil {
		labels = c.Config.Labels
	}
	if labels[LabelAllocID] != cfg.AllocID || labels[LabelTask] != cfg.TaskName {
		return fmt.Errorf("%w: task %q: container name %s is taken by container %s, which is not this task's; remove it",
			ErrInvalidTask, cfg.TaskName, name, shortID(c.ID))
	}
	d.logger.Info("removing a leftover container of the task", "task", cfg.TaskName, "alloc_id", cfg.AllocID,
		"container_id", shortID(c.ID))
	if err := d.Remove(ctx, c.ID); err != nil {
		return fmt.Errorf("task %q: remove leftover container %s: %w", cfg.TaskName, name, err)
	}
	return nil
}

// shortID is a container ID as the docker CLI shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// startHint says what to do about an engine's refusal to start that
// people cannot read from the engine's words alone.
func startHint(cfg *TaskConfig, err error) string {
	if cfg.Privileged && strings.Contains(err.Error(), "unable to apply caps") {
		return "; this engine cannot give a container every capability (it runs with a reduced capability " +
			"bounding set, as inside another container): run the task without privileged, with cap_add " +
			"naming the capabilities it needs (a CSI plugin that mounts needs sys_admin)"
	}
	return ""
}
