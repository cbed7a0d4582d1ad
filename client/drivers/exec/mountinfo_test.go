package exec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
)

// tmpfsAt mounts a small tmpfs at dir (made if missing), detached again
// when the test ends.
func tmpfsAt(t *testing.T, dir string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(dir, 0o755))
	must.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _, _ = detach(dir) })
}

// TestMountsUnder_EscapedPaths: mountinfo escapes a space, a tab and a
// backslash (\040, \011, \134); the mount points come back as the paths
// they are, and are detached by them.
func TestMountsUnder_EscapedPaths(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	odd := filepath.Join(dir, "with space", "tab\tand\\backslash")
	tmpfsAt(t, odd)

	mps, err := MountsUnder(dir)
	must.NoError(t, err)
	must.Eq(t, []string{odd}, mps)
	mounted, err := isMountPoint(odd)
	must.NoError(t, err)
	must.True(t, mounted)

	detached, err := DetachMountsUnder(dir, nil)
	must.NoError(t, err)
	must.Eq(t, []string{odd}, detached)
	must.SliceEmpty(t, hostMountsUnder(t, dir))
}

// TestDetach_NeverFollowsALink: a task can remove a mount point in its
// own namespace and leave a link in its place, to a mount of the host's;
// detaching that path must not unmount what the link points to.
func TestDetach_NeverFollowsALink(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "host mount")
	tmpfsAt(t, target)
	link := filepath.Join(dir, "link")
	must.NoError(t, os.Symlink(target, link))

	n, err := detach(link)
	must.NoError(t, err)
	must.Zero(t, n, must.Sprint("nothing is mounted on the link itself"))
	mounted, err := isMountPoint(target)
	must.NoError(t, err)
	must.True(t, mounted, must.Sprintf("%s must still be mounted", target))

	n, err = detach(target)
	must.NoError(t, err)
	must.EqOp(t, 1, n)
	mounted, err = isMountPoint(target)
	must.NoError(t, err)
	must.False(t, mounted)
}
