// Package exec is berth's exec task driver: a task is one process, started
// from its command and args (no shell), in its own mount namespace, with
// its working directory in the task dir, its environment (the task's env
// plus BERTH_ALLOC_ID, BERTH_TASK_NAME, BERTH_TASK_DIR, BERTH_ALLOC_DIR
// and the caller's Extra, such as BERTH_NODE_NAME), ${NAME} in the command
// and args replaced by that environment's NAME, and its stdout and stderr appended to log files the caller names.
//
// The mount namespace is set up by a re-exec of the running binary (moby's
// reexec pattern): Start runs /proc/self/exe with argv[0] "berth-exec-init"
// and CLONE_NEWNS; the child's Init reads the task's spec from a pipe, makes
// every mount of the new namespace a slave (so nothing the task mounts
// reaches the host, while the host's unmounts still reach the task), bind
// mounts the volumes with the propagation asked (private: rprivate,
// host-to-task: rslave, bidirectional: rshared), remounts read-only ones,
// enters the task dir, drops to the task's user (setgroups, setgid,
// setuid: for good) and execs the command. A setup error comes back to Start over a
// close-on-exec pipe, so Start either returns a running task or the reason
// it could not start. Hence Init must be the first call of main() in every
// binary that starts tasks (cmd/berth) and of TestMain in every test
// package that does.
//
// A task runs in its own process group; Stop signals the group, waits up
// to the kill timeout and then kills the group. Without root there is no
// new mount namespace, and a task with volume mounts is refused.
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
// What is not isolated: the task shares the host's root file system, PIDs
// and network (no chroot, no PID namespace, no cgroups), so a task
// that leaves its process group (setsid) outlives Stop; an absolute mount
// destination that does not exist is created as an empty directory on the
// host (the mount itself exists only in the task's namespace).
//
// Imports: the standard library and structs (propagation modes, the
// default user). Linux only.
//
// Concurrency: a *Handle is safe for concurrent use; one goroutine per task
// waits for the process (or, for a reattached task, polls it) and closes
// Done when it is gone.
package exec
