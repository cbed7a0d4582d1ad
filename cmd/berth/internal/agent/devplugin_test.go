package agent

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestMountPointsUnder_DeepestFirst(t *testing.T) {
	table := `22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
40 22 8:1 /tmp/d/plugins/hostpath/volumes/v1 /tmp/d/a rw - ext4 /dev/sda1 rw
41 40 8:1 /x /tmp/d/a/b\040c rw - ext4 /dev/sda1 rw
42 22 0:5 / /tmp/dd rw - tmpfs tmpfs rw
43 22 0:5 / /tmp/d rw - tmpfs tmpfs rw
`
	got := mountPointsUnder(strings.NewReader(table), "/tmp/d/")
	must.Eq(t, []string{"/tmp/d/a/b c", "/tmp/d/a", "/tmp/d"}, got)
}
