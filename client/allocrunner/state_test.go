package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/exec"
)

// TestState_ReadsHandlesOfEarlierClients: a state file written before
// drivers other than exec keeps its tasks (exec's fields at the top level,
// no driver), and a container's handle survives a write and a read.
func TestState_ReadsHandlesOfEarlierClients(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	old := `{"Handles":{"web":{"TaskName":"web","Pid":4242,"StartTime":99,"Cleanups":[{"Source":"/v","Before":["/v/a"]}]}},"Fenceable":true}`
	must.NoError(t, os.WriteFile(path, []byte(old), 0o600))

	st, err := openState(path)
	must.NoError(t, err)
	h, ok := st.handle("web")
	must.True(t, ok)
	must.Eq(t, savedHandle{HandleState: exec.HandleState{TaskName: "web", Pid: 4242, StartTime: 99,
		Cleanups: []exec.MountCleanup{{Source: "/v", Before: []string{"/v/a"}}}}}, h)

	db := savedHandle{HandleState: exec.HandleState{TaskName: "db"}, Driver: "docker", ContainerID: "0123abcd"}
	must.NoError(t, st.setHandle("db", &db))
	again, err := openState(path)
	must.NoError(t, err)
	got, ok := again.handle("db")
	must.True(t, ok)
	must.Eq(t, db, got)
	got, ok = again.handle("web")
	must.True(t, ok)
	must.Eq(t, h, got)
}

// TestReattach_UnknownDriver: a recorded task of a driver this client does
// not know is reported, not guessed at.
func TestReattach_UnknownDriver(t *testing.T) {
	_, err := reattach(t.Context(), savedHandle{HandleState: exec.HandleState{TaskName: "x"}, Driver: "rkt"}, nil)
	must.ErrorContains(t, err, `driver "rkt"`)
}
