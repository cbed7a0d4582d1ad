package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestMountPoints_ParsesAndUnescapes(t *testing.T) {
	info := strings.Join([]string{
		`22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw`,
		`43 22 254:0 /srv/vol /mnt/with\040space rw,relatime - ext4 /dev/vda rw`,
		`44 22 254:0 /srv/vol /mnt/tab\011and\134backslash ro - ext4 /dev/vda rw`,
		`45 22 0:5 / /mnt/odd\04 rw - tmpfs tmpfs rw`,
	}, "\n")
	got, err := mountPoints(strings.NewReader(info))
	must.NoError(t, err)
	must.Eq(t, map[string]bool{
		"/":                        true,
		"/mnt/with space":          true,
		"/mnt/tab\tand\\backslash": true,
		`/mnt/odd\04`:              true,
	}, got)

	_, err = mountPoints(strings.NewReader("short line"))
	must.ErrorContains(t, err, "malformed line")
}

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

	// a symlink to a mount point is resolved
	link := filepath.Join(dir, "root")
	must.NoError(t, os.Symlink("/", link))
	mounted, err = isMountPoint(link)
	must.NoError(t, err)
	must.True(t, mounted)
}

func TestBindMount_AndUnmount(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	unmountUnder(t, dir)
	src, dst := filepath.Join(dir, "src dir"), filepath.Join(dir, "dst dir") // spaces are escaped in mountinfo
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
