// Package beneath opens, makes and changes files beneath a directory berth
// trusts (an alloc dir) without following a symbolic link below it, and
// without leaving it: what a task may write under its alloc dir is hostile
// input to the client, which runs as root, and a link a task planted there
// must never point a root operation at a host file.
//
// Every path is resolved by the kernel in one openat2(2) call with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS from an fd of
// the root (no path walking in user space, so there is no window between a
// check and a use); a link anywhere in the path, the last component
// included, is ErrLink, and a file where a directory is needed ErrNotDir.
// Owners, modes and times are changed through the fd that was opened, or
// with AT_SYMLINK_NOFOLLOW on a name in a directory fd that was. The root
// itself is opened with O_NOFOLLOW: its parents are the client's.
//
// The kernel must have openat2 (Linux 5.6); on an older one every call
// fails with ErrUnsupported, which says so.
//
// Imports: the standard library and golang.org/x/sys/unix only. Linux only.
//
// Concurrency: a *Root is safe for concurrent use; Close it once done.
package beneath
