package chaos

import (
	"testing"

	bexec "github.com/berth-csi/berth/client/drivers/exec"
)

// detachMountsUnder lazily unmounts whatever stayed mounted under dir.
func detachMountsUnder(t testing.TB, dir string) {
	if detached, err := bexec.DetachMountsUnder(dir, nil); err != nil {
		t.Errorf("chaos: detach mounts under %s: %v", dir, err)
	} else if len(detached) > 0 {
		t.Logf("chaos: detached %d mounts left under %s", len(detached), dir)
	}
}
