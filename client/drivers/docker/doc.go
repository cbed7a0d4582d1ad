// Package docker is berth's docker task driver: a task is one container of
// a local image, started and watched through the Docker Engine API (the
// official Go client, API version negotiated, so an engine from API 1.41
// on works).
//
// A container carries berth's labels (LabelAllocID, LabelJobID,
// LabelNamespace, LabelGroup, LabelTask; the task's own labels may not use
// the "berth." prefix) and the name berth-<task>-<alloc ID>, made a valid
// Docker name. A leftover container of the same task and alloc under that
// name (from a start that crashed) is removed before the new one is
// created; a container of anything else under it is refused. The task dir
// is bound at TaskMountPoint (/berth/local, also the working directory),
// and the alloc dir's data/ and tmp/ under AllocMountPoint (/berth/alloc):
// not its logs/, so a container never reaches the files the client writes
// and reads for it. BERTH_TASK_DIR and BERTH_ALLOC_DIR name those paths. Volumes are bind mounts with the
// propagation asked (private: rprivate, host-to-task: rslave,
// bidirectional: rshared); a relative destination is under /berth/local.
// The environment is the task's env, then the caller's Extra, then
// BERTH_ALLOC_ID, BERTH_TASK_NAME, BERTH_TASK_DIR and BERTH_ALLOC_DIR (on
// top of the image's own); ${NAME} in the command, args and entrypoint is
// replaced from it (structs.InterpolateEnv, as the exec driver does). The
// network mode is host unless the task asks for bridge or none;
// privileged containers need Config.AllowPrivileged. The image must be on
// the node already (ErrImageMissing) unless the task asks for a pull.
//
// Lifecycle: Start creates the container, registers a wait for its next
// exit, starts it and returns a *Handle. The handle's goroutine waits for
// the exit (re-waiting with backoff if the engine's stream breaks), reads
// the exit code and OOM kill from an inspect, lets the log copy finish,
// removes the container, and only then closes Done, so a restart can
// reuse the name. Stop sends the signal with ContainerKill, then SIGKILL
// after the timeout; an exit code of 128+n after Stop sent signal n is
// reported as ExitResult.Signal n.
//
// Logs: the container logs to the engine's "local" driver; the handle
// follows its stream with timestamps, strips them, demultiplexes it
// (stdcopy) and appends stdout and stderr to the caller's files, so they
// read as an exec task's. After each frame the file's modification time
// is set to the frame's timestamp: the files themselves record how far
// the copy got (to the nanosecond on ext4, xfs or tmpfs; a file system
// with coarser times can make a reattach copy a few lines again). Reattach resumes the stream from just after the later of
// the two times (nothing copied before a client restart is copied again;
// a frame in flight when the old client died, stamped before its last
// write landed, can be lost), or from the container's start when neither
// file exists. The log paths travel with the container as labels
// (LabelStdoutPath, LabelStderrPath, and LabelLogRoot: the alloc dir they
// are opened beneath, following no link), so HandleState needs only the
// ID.
//
// Reattach inspects a container a previous client started: running gives
// a handle that waits on it as Start's does (with the real exit code: the
// engine keeps it); anything else is ErrGone, and the caller removes it.
// Owned lists every container with berth's labels, for the client's sweep
// of containers no alloc claims; Remove force-removes one, idempotently.
//
// Imports: structs (propagation modes), internal/backoff,
// client/internal/beneath (the log files), the Docker client and its API
// types; never the exec driver, allocrunner, server,
// state or fsm. Tests build their images through dockertest.
//
// Concurrency: a *Driver and a *Handle are safe for concurrent use. Each
// handle has one goroutine (and a log copier under it) owned by its
// Driver; Close stops them without touching the containers: a handle's
// Done then never closes, and the next client reattaches.
package docker
