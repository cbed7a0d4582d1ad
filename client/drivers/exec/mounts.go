package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/structs"
)

// Mount is a bind mount into the task's namespace.
type Mount struct {
	// Source is the host path (a volume's publish path).
	Source string
	// Device says Source is a block device node (a block volume): an exec
	// task gets it bound at Destination like a file (its mode says who
	// opens it; exec tasks have no device cgroup), a container through the
	// engine's devices, which its device cgroup allows.
	Device bool
	// Destination is where the task sees it: absolute in the task's
	// namespace, or relative to the task dir.
	Destination string
	ReadOnly    bool
	// Propagation is structs.PropagationPrivate (the default),
	// PropagationHostToTask or PropagationBidirectional. Bidirectional
	// needs a read-write mount whose Source is a mount point.
	Propagation string
	// DetachOnExit detaches, when the task is gone, every mount that
	// appeared under a bidirectional Source while the task ran (the task's
	// mounts, which the host received; on a volume's per-alloc publish
	// path nothing else mounts): on for volumes, off for a plugin's own
	// directories, whose mounts must outlive the plugin.
	DetachOnExit bool
}

// propagationFlag maps a propagation mode to its mount flag.
func propagationFlag(mode string) (uintptr, error) {
	switch mode {
	case "", structs.PropagationPrivate:
		return syscall.MS_PRIVATE, nil
	case structs.PropagationHostToTask:
		return syscall.MS_SLAVE, nil
	case structs.PropagationBidirectional:
		return syscall.MS_SHARED, nil
	}
	return 0, fmt.Errorf("propagation mode %q is not private, host-to-task or bidirectional", mode)
}

// setupMounts runs in the init, inside the new namespaces. First every
// mount becomes a slave, so nothing made here reaches the host; mounts at
// or under a bidirectional source stay shared, so that the bind of it is a
// peer of the host's mount. Then a fresh /proc, then the binds, read-only
// remounts and the propagation of each.
func setupMounts(mounts []Mount, taskDir string) error {
	var shared []string
	for _, m := range mounts {
		if m.Propagation == structs.PropagationBidirectional {
			shared = append(shared, m.Source)
		}
	}
	if len(shared) == 0 {
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("make the task's mounts slaves: %w", err)
		}
	} else if err := slaveAllBut(shared); err != nil {
		return err
	}
	if err := mountProc(); err != nil {
		return err
	}
	for _, m := range mounts {
		if err := bind(m, taskDir); err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.Source, m.Destination, err)
		}
	}
	return nil
}

// mountProc mounts a proc of the init's PID namespace over /proc: the
// task sees (ps, /proc/PID) its own namespace's processes only. /proc is
// a slave by then (no bidirectional source may hold it), so the mount
// stays in the task's mount namespace; the host's /proc is only hidden.
func mountProc() error {
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("proc", "/proc", "proc", flags, ""); err != nil {
		return fmt.Errorf("mount the task's /proc: %w", err)
	}
	return nil
}

// slaveAllBut makes every mount a slave, one by one, except those at or
// under a shared source; each shared source must be a mount point.
func slaveAllBut(shared []string) error {
	mps, err := mountPoints(nil)
	if err != nil {
		return fmt.Errorf("list mounts: %w", err)
	}
	for _, s := range shared {
		if !slices.Contains(mps, s) {
			return fmt.Errorf("bidirectional propagation needs %s to be a mount point", s)
		}
	}
next:
	for _, mp := range mps {
		for _, s := range shared {
			if under(mp, s) {
				continue next
			}
		}
		// A mount hidden under a later one is not reachable by its path:
		// the task cannot mount on it either.
		err := syscall.Mount("", mp, "", syscall.MS_SLAVE, "")
		if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("make %s a slave: %w", mp, err)
		}
	}
	return nil
}

// bind makes the mount, its read-only remount and its propagation. A
// destination in the task dir is found and made beneath it, and mounted
// on through an fd (mountTarget): the task writes its dir, and may have
// left a link there for the next start.
func bind(m Mount, taskDir string) error {
	prop, err := propagationFlag(m.Propagation)
	if err != nil {
		return err
	}
	fi, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	target, release, err := mountTarget(taskDir, m.Destination, fi.IsDir(), true)
	if err != nil {
		return err
	}
	err = syscall.Mount(m.Source, target, "", syscall.MS_BIND|syscall.MS_REC, "")
	release()
	if err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	// Found again the same way: the bind's root, now.
	top, release, err := mountTarget(taskDir, m.Destination, fi.IsDir(), false)
	if err != nil {
		return err
	}
	defer release()
	if m.ReadOnly {
		if err := remountReadOnly(top, m.Destination); err != nil {
			return err
		}
	}
	if err := syscall.Mount("", top, "", syscall.MS_REC|prop, ""); err != nil {
		return fmt.Errorf("set propagation %s: %w", m.Propagation, err)
	}
	return nil
}

// mountTarget is the path to mount on at dest, made first when make is
// set (a dir, or an empty file for a file source): dest itself when it is
// outside the task dir (a path of the host's tree that the job names),
// else the magic link of an fd opened beneath the task dir, where a link
// is refused, never followed. release closes the fd.
func mountTarget(taskDir, dest string, dir, make bool) (string, func(), error) {
	nothing := func() {}
	if !under(dest, taskDir) {
		if make {
			if err := ensureTarget(dest, dir); err != nil {
				return "", nothing, err
			}
		}
		return dest, nothing, nil
	}
	root, err := beneath.Open(taskDir)
	if err != nil {
		return "", nothing, err
	}
	defer root.Close()
	rel, err := beneath.Split(taskDir, dest)
	if err != nil {
		return "", nothing, err
	}
	if make {
		if err := ensureTargetBeneath(root, rel, dir); err != nil {
			return "", nothing, err
		}
	}
	f, err := root.OpenPath(rel)
	if err != nil {
		return "", nothing, err
	}
	return beneath.MagicPath(f), func() { f.Close() }, nil
}

// ensureTarget makes an absolute mount point outside the task dir, a
// path of the host's tree: a directory is made (beneath /, through no
// link, so one planted in a shared dir such as /tmp does not move it);
// a file mount point must exist, since an empty file at a path a job
// names (/etc/nologin) changes the host.
func ensureTarget(path string, dir bool) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if !dir {
		return fmt.Errorf("the mount point %s does not exist on this node, and berth makes no files in the host's tree: "+
			"create it there, or give a destination under the task dir", path)
	}
	root, err := beneath.Open("/")
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(strings.TrimPrefix(filepath.Clean(path), "/"), 0o755)
}

// ensureTargetBeneath is ensureTarget beneath the task dir.
func ensureTargetBeneath(root *beneath.Root, rel string, dir bool) error {
	if dir {
		return root.MkdirAll(rel, 0o755)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	f, err := root.OpenFile(rel, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// remountReadOnly makes the bind at top (path, or an fd's link to it) and
// every mount under path read-only, keeping each one's nosuid, nodev,
// noexec and atime flags (a bind remount clears what it does not repeat).
func remountReadOnly(top, path string) error {
	mps, err := MountsUnder(path)
	if err != nil {
		return err
	}
	for _, mp := range append([]string{top}, mps...) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(mp, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", mp, err)
		}
		flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
		for _, f := range keptFlags {
			if uintptr(st.Flags)&f.st != 0 {
				flags |= f.ms
			}
		}
		if err := syscall.Mount("", mp, "", flags, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", mp, err)
		}
	}
	return nil
}

// keptFlags maps statfs's ST_* flags to the MS_* flags a read-only remount
// repeats.
var keptFlags = []struct{ st, ms uintptr }{
	{0x2, syscall.MS_NOSUID},       // ST_NOSUID
	{0x4, syscall.MS_NODEV},        // ST_NODEV
	{0x8, syscall.MS_NOEXEC},       // ST_NOEXEC
	{0x400, syscall.MS_NOATIME},    // ST_NOATIME
	{0x800, syscall.MS_NODIRATIME}, // ST_NODIRATIME
	{0x1000, syscall.MS_RELATIME},  // ST_RELATIME
}
