package client

import (
	"os"
	"testing"

	"github.com/berth-csi/berth/client/drivers/exec"
)

// TestMain lets the test binary be a task's init: the exec driver re-runs
// it to set up each task's mount namespace.
func TestMain(m *testing.M) {
	exec.Init()
	os.Exit(m.Run())
}
