// Package allocrunner runs one allocation on a client: it lays out the
// alloc dir (DATA/alloc/<alloc ID>/alloc/{logs,data,tmp} shared by the
// tasks, DATA/alloc/<alloc ID>/<task>/local per task), runs the volume
// hook, runs every task with the exec driver under its restart policy,
// records task events, and reports the alloc's client status; when the
// servers want the alloc stopped it kills the tasks (signal, then kill
// after the kill timeout) and only then unmounts the volumes.
//
// Volume hook, before any task starts: for each CSI volume of the group
// (source, or source[index] for per_alloc), read the volume for its
// plugin, confirm the claim with the servers (CSIVolume.Claim, state
// taken, with this node's ID and the plugin's node ID), mount it through
// the VolumeMounter (stage once per volume per node, publish per alloc),
// and bind the published path into each task at its volume_mount
// destination with the propagation asked.
//
// Plugin tasks (a task with a csi_plugin block): before each start the
// plugin's host dir (volumemanager.PluginHostDir, holding its socket
// csi.sock and its staging and per-alloc dirs) is made a shared mount
// point and bound at the task's mount_dir with bidirectional propagation,
// and CSI_ENDPOINT=unix://<mount_dir>/csi.sock is in its env. The plugin
// must probe healthy within health_timeout, or it is stopped (a "Plugin
// Unhealthy" event says why) and restarted per its restart policy. Once
// healthy it is registered in the client's plugin registry (source task,
// MountDir set, so that the volume manager sends it the paths inside its
// mount); it is probed every PluginProbeInterval, each change of health is
// a task event, and it is deregistered when its process ends. A node runs
// a plugin's monolith task, or its controller and node tasks side by side
// (the controller on its own socket, csi-controller.sock); a second task
// of a type the node runs replaces the first's registration.
//
// Status rules: pending until every task has started once; running; failed
// as soon as a task fails beyond its restart policy (its siblings are then
// killed); complete when every task has finished (batch tasks that exit 0
// are done; service tasks restart whatever their exit); a stopped alloc is
// complete once its tasks are dead and its volumes unmounted.
//
// The alloc dir is the tasks' to write, so what is under it is hostile to
// the client, which runs as root: every dir it makes or changes there
// (the layout, a task's own dirs given to its user), and the logs it
// reads, are reached beneath it (client/internal/beneath), never through
// a link; an entry a task replaced with a link or a file fails the
// allocation with an event that names it, its tasks killed first.
//
// Restarts of the client: a task's handle (PID and start time) is kept in
// DATA/client/allocs/<alloc ID>.json. A new runner for an alloc the
// servers still want running checks its alloc dir again as above,
// re-runs the volume hook (claim and mount are
// idempotent), reattaches to the tasks still running, starts those whose
// process is gone, and leaves alone those the servers' task states say
// are dead. Shutdown (the agent stopping) leaves tasks and volumes as they
// are. Not done: the exit code of a reattached task (its parent was the
// old client) is unknown, so its end counts as a failure; restart counts
// and windows start afresh after a client restart; an alloc whose job
// changes in place is not updated (only its desired status is read). The
// volume's secrets come with the claim (CSIVolumeClaimResponse.NodeSecrets)
// and go to the node stage and publish calls only; they are never stored.
//
// Imports: the standard library, hclog, structs, client/drivers/exec,
// client/volumemanager (its request types and PluginHostDir),
// client/dynamicplugins (registrations), client/csi (the plugin task's
// probe), client/internal/beneath (the alloc dir), internal/atomicfile
// and internal/backoff (retries).
// Tests call exec.Init in TestMain: tasks are real processes.
//
// Concurrency: Run owns one goroutine per task; Update, Shutdown and Alloc
// may be called from any goroutine. The runner's state is guarded by its
// mutex, and OnUpdate is called with that mutex held, in order: it must
// not call back into the runner.
package allocrunner
