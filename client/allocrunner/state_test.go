package allocrunner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestReattachRecorded_GoneOrUnknown: a recorded task whose process is
// gone is reported gone (nil, nil); one whose driver cannot tell is an
// error, after retries, never taken for gone.
func TestReattachRecorded_GoneOrUnknown(t *testing.T) {
	old := reattachWait
	reattachWait = 300 * time.Millisecond
	t.Cleanup(func() { reattachWait = old })

	h, err := reattachRecorded(t.Context(), savedHandle{HandleState: exec.HandleState{TaskName: "x", Pid: 1 << 22, StartTime: 1}}, nil)
	must.NoError(t, err)
	must.Nil(t, h)

	h, err = reattachRecorded(t.Context(), savedHandle{HandleState: exec.HandleState{TaskName: "db"}, Driver: "docker", ContainerID: "0123abcd"}, nil)
	must.Nil(t, h)
	must.ErrorContains(t, err, "no longer runs")
}

// TestFenceOrphan_KeepsWhatItCannotFind: a fence that cannot tell whether
// a recorded task still runs keeps its handle and says so, rather than
// forget a task that may still write.
func TestFenceOrphan_KeepsWhatItCannotFind(t *testing.T) {
	old := reattachWait
	reattachWait = 300 * time.Millisecond
	t.Cleanup(func() { reattachWait = old })
	dataDir, allocID := t.TempDir(), "0b1c2d3e-0000-4000-8000-000000000001"
	st := mustState(t, dataDir, allocID)
	st.setFenceable(true)
	must.NoError(t, st.setHandle("db", &savedHandle{HandleState: exec.HandleState{TaskName: "db"}, Driver: "docker", ContainerID: "0123abcd"}))

	killed, err := FenceOrphan(t.Context(), dataDir, allocID, 100*time.Millisecond, nil)
	must.False(t, killed)
	must.ErrorContains(t, err, `task "db"`)
	_, ok := mustState(t, dataDir, allocID).handle("db")
	must.True(t, ok, must.Sprint("the handle is kept"))
}
