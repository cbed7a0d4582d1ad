package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestIsMountPoint(t *testing.T) {
	dir := t.TempDir()
	mounted, err := isMountPoint(dir)
	must.NoError(t, err)
	must.False(t, mounted)

	mounted, err = isMountPoint(filepath.Join(dir, "missing"))
	must.NoError(t, err)
	must.False(t, mounted, must.Sprint("a missing path is not a mount point"))

	mounted, err = isMountPoint("/")
	must.NoError(t, err)
	must.True(t, mounted)

	// a path that is itself a symlink is refused, not followed; a link in
	// its parents (the operator's dirs) is resolved
	link := filepath.Join(dir, "root")
	must.NoError(t, os.Symlink("/", link))
	_, err = isMountPoint(link)
	must.ErrorIs(t, err, errSymlink)
	mounted, err = isMountPoint(filepath.Join(link, "proc"))
	must.NoError(t, err)
	must.True(t, mounted, must.Sprint("/proc, reached through a linked parent"))
}

func TestBindMount_AndUnmount(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	unmountUnder(t, dir)
	// mountinfo escapes a space, a tab and a backslash (\040, \011, \134)
	src, dst := filepath.Join(dir, "src dir"), filepath.Join(dir, "dst dir\twith\\escapes")
	must.NoError(t, os.Mkdir(src, 0o755))
	must.NoError(t, os.Mkdir(dst, 0o755))

	must.NoError(t, bindMount(src, dst, true, []string{"nodev"}))
	mustMounted(t, dst, true)
	mustWritable(t, dst, false)
	// stacked mounts all come off
	must.NoError(t, bindMount(src, dst, false, nil))
	must.NoError(t, unmount(dst))
	mustMounted(t, dst, false)
	must.NoError(t, unmount(dst), must.Sprint("unmounting twice is fine"))
	must.NoError(t, unmount(filepath.Join(dir, "missing")))

	err := bindMount(filepath.Join(dir, "missing"), dst, false, nil)
	must.ErrorContains(t, err, "bind mount")
	mustMounted(t, dst, false)
}

// TestUnmount_RefusesASymlink: a link put in place of a mount point (a
// task removed the directory in its own namespace) is never followed: the
// mount it points to stays, and the error names the path.
func TestUnmount_RefusesASymlink(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	unmountUnder(t, dir)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "host mount")
	must.NoError(t, os.Mkdir(src, 0o755))
	must.NoError(t, os.Mkdir(dst, 0o755))
	must.NoError(t, bindMount(src, dst, false, nil))
	link := filepath.Join(dir, "link")
	must.NoError(t, os.Symlink(dst, link))

	err := unmount(link)
	must.ErrorIs(t, err, errSymlink)
	must.ErrorContains(t, err, "unmount "+link+": it is a symlink")
	mustMounted(t, dst, true)

	err = bindMount(src, link, false, nil)
	must.ErrorIs(t, err, errSymlink, must.Sprint("nothing is mounted through a link either"))
	must.ErrorContains(t, err, "on "+link+": it is a symlink")
	_, err = isMountPoint(link)
	must.ErrorIs(t, err, errSymlink, must.Sprint("a link to a mount point does not pass for one (a stage or publish again would trust it)"))

	must.NoError(t, unmount(dst))
	mustMounted(t, dst, false)
}
