// Package exec is berth's exec task driver: a task is one process, started
// from its command and args (no shell), in its own mount and PID
// namespaces, with its working directory in the task dir, its environment
// (the task's env plus BERTH_ALLOC_ID, BERTH_TASK_NAME, BERTH_TASK_DIR,
// BERTH_ALLOC_DIR and the caller's Extra, such as BERTH_NODE_NAME),
// ${NAME} in the command and args replaced by that environment's NAME
// (structs.InterpolateEnv, as the docker driver does), and
// its stdout and stderr appended to log files the caller names, opened
// beneath the alloc dir (TaskConfig.LogRoot) without following a link.
//
// The namespaces are set up by a re-exec of the running binary (moby's
// reexec pattern): Start runs /proc/self/exe with argv[0] "berth-exec-init"
// and CLONE_NEWNS|CLONE_NEWPID; the child, the task's init and PID 1 of its
// PID namespace, reads the task's spec from a pipe, makes every mount of
// the new namespace a slave (so nothing the task mounts reaches the host,
// while the host's unmounts still reach the task), mounts a proc of the new
// PID namespace over /proc, bind mounts the volumes with the propagation
// asked (private: rprivate, host-to-task: rslave, bidirectional: rshared;
// a destination in the task dir, which the task writes, is made and
// mounted on beneath it through an fd, never through a link the task left
// there), remounts read-only ones, enters the task dir, drops to the task's user
// (setgroups, setgid, setuid: for good) and starts the command as its
// child. A setup error comes back to Start over a close-on-exec pipe, so
// Start either returns a running task or the reason it could not start.
// Hence Init must be the first call of main() in every binary that starts
// tasks (cmd/berth) and of TestMain in every test package that does.
//
// The init stays, as tini (Docker's --init) does, because a PID 1 is
// special: the kernel drops every signal it has no handler for, and
// orphans are reparented to it. So the command is its child, not PID 1
// (its PID is low, after the init's threads); the init passes every signal
// it receives on to the command's process group, reaps the orphans, and
// when the command ends writes how (exit code, or signal) to a third pipe,
// which the Handle reads, and exits (128+signal for a signal, since it
// cannot kill itself with one). When PID 1 of a namespace is gone the
// kernel kills every process left in it: nothing the task started, a
// process that left its process group or session (setsid) included,
// outlives it.
//
// Layout, as root: berth -> init (host PID = Handle.Pid, HandleState.Pid;
// namespace PID 1; its own process group) -> command (its own process
// group) -> the command's children. Stop signals the init's group, and the
// init the command's; after the kill timeout Stop kills the init, and with
// it the namespace. A client restart reattaches to the init by its PID and
// start time: it lives exactly as long as the command. The task's /proc
// lists the init and the task's processes only, and their PIDs are the
// namespace's: a PID a task reports ($$) is not the host's.
//
// Without root there are no new namespaces: the init executes the command
// itself, which runs in its own process group; Stop signals the group,
// waits up to the kill timeout and then kills the group; a task with
// volume mounts is refused.
//
// Users: a task runs as the user its config names (a name or a numeric
// uid, looked up with os/user for its uid, gid and supplementary groups),
// DefaultUser ("nobody") when it names none. Root (uid 0, by any name)
// needs TaskConfig.AllowRoot; an unknown user is refused before anything
// runs (ErrUnknownUser). The task starts in its task dir, entered before
// the drop: relative paths work even where a dir above it is not
// searchable by the user, absolute ones only where every one is. Its logs
// are opened by berth and handed to it: it needs no access to them. Without root berth cannot switch
// users: tasks run as berth's own user and one that names another is
// refused (ErrNeedsRoot).
//
// What is not isolated: the task shares the host's root file system, IPC,
// hostname and network (no chroot, no IPC, UTS or network namespace): it
// sees the host's files (its /proc aside) and sockets, and abstract unix
// sockets and SysV IPC reach across tasks; an absolute mount destination
// that does not exist is created as an empty directory on the host, through
// no link (the mount itself exists only in the task's namespace; a file
// mount point must exist). Its resources (TaskConfig.Limits) are enforced
// in a cgroup of its own, made before the command starts (cgroup.go).
// Without root, the task also shares the host's PIDs: it sees and may signal
// every process of its user, and one that leaves its process group
// (setsid) outlives Stop.
//
// Imports: the standard library, golang.org/x/sys/unix (prctl),
// containerd/cgroups (a task's limits),
// client/internal/beneath (log files and mount points in the task dir) and
// structs (propagation modes, the default user). Linux only.
//
// Concurrency: a *Handle is safe for concurrent use; one goroutine per task
// waits for the process (or, for a reattached task, polls it) and closes
// Done when it is gone.
package exec
