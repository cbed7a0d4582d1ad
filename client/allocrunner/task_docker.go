package allocrunner

import (
	"fmt"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/structs"
)

// checkDriver refuses a task no driver of this client can run.
func (r *Runner) checkDriver(t *structs.Task) error {
	if t.Driver != structs.DriverDocker {
		_, _, err := execConfig(t)
		return err
	}
	if _, err := structs.DockerTaskConfig(t.Config); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if r.cfg.Docker == nil {
		return fmt.Errorf("the docker driver is not enabled on node %q; enable it with driver \"docker\" { enabled = true } "+
			"in the client's config, or run the task with driver = \"exec\"", r.nodeName())
	}
	return nil
}

// dockerTask is task t's start: what every driver's start has (cfg: the
// task's dirs, logs, env and mounts) and its docker config. The user is
// the task's own: none means the image's.
func (r *Runner) dockerTask(t *structs.Task, cfg *exec.TaskConfig, dc *structs.DockerConfig) *docker.TaskConfig {
	mounts := make([]docker.Mount, len(cfg.Mounts))
	for i, m := range cfg.Mounts {
		mounts[i] = docker.Mount{Source: m.Source, Destination: m.Destination, ReadOnly: m.ReadOnly, Propagation: m.Propagation, Device: m.Device}
	}
	return &docker.TaskConfig{
		AllocID: cfg.AllocID, JobID: r.cfg.Alloc.JobID, Namespace: r.cfg.Alloc.Namespace, Group: r.tg.Name,
		TaskName: cfg.TaskName, NodeName: r.nodeName(),
		TaskDir: cfg.TaskDir, AllocDir: cfg.AllocDir, StdoutPath: cfg.StdoutPath, StderrPath: cfg.StderrPath, LogRoot: cfg.LogRoot,
		Image: dc.Image, Command: dc.Command, Args: dc.Args, Entrypoint: dc.Entrypoint,
		Privileged: dc.Privileged, CapAdd: dc.CapAdd, CapDrop: dc.CapDrop, NetworkMode: dc.NetworkMode, Labels: dc.Labels, ForcePull: dc.ForcePull,
		Env: cfg.Env, Extra: cfg.Extra, User: t.User, AllowRoot: r.cfg.AllowRootTasks, Mounts: mounts,
		Resources: dockerResources(cfg.Limits),
		Plugin:    t.CSIPluginConfig != nil && t.CSIPluginConfig.Type != structs.CSIPluginTypeController,
	}
}

// dockerResources are a task's limits as the engine takes them.
func dockerResources(l *exec.Limits) docker.Resources {
	if l == nil {
		return docker.Resources{}
	}
	return docker.Resources{CPUShares: int64(l.CPUShares), Cpuset: l.Cpuset, MemoryBytes: l.MemoryBytes, MemoryReservationBytes: l.MemoryLowBytes}
}

// nodeName names this node in messages: its name, else its ID.
func (r *Runner) nodeName() string {
	if r.cfg.NodeName != "" {
		return r.cfg.NodeName
	}
	return r.cfg.NodeID
}
