package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// buildHostpath builds berth-hostpath into a temp dir on PATH, where the
// dev agent looks for it.
func buildHostpath(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "berth-hostpath"), "github.com/berth-csi/berth/cmd/berth-hostpath").CombinedOutput()
	must.NoError(t, err, must.Sprintf("build berth-hostpath: %s", out))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func getJSON(url string, out any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(out) == nil
}

func TestRun_Dev_ServesAndStopsCleanly(t *testing.T) {
	buildHostpath(t)
	httpPort := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Recorder{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"-dev", "-http-port", strconv.Itoa(httpPort),
			"-rpc-port", strconv.Itoa(freePort(t)), "-serf-port", strconv.Itoa(freePort(t))}, logs, logs)
	}()

	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	started := time.Now()
	deadline := started.Add(30 * time.Second)
	var plug structs.CSIPlugin
	for time.Now().Before(deadline) {
		if getJSON(base+"/v1/plugin/csi/hostpath", &plug) && plug.ControllersHealthy == 1 && plug.NodesHealthy == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	must.Eq(t, 1, plug.NodesHealthy, must.Sprintf("the built-in hostpath plugin never became healthy; logs:\n%s", logs.String()))
	must.Eq(t, 1, plug.ControllersHealthy)
	must.Eq(t, "hostpath.berth.dev", plug.Provider)
	must.NotEq(t, "", plug.Version)
	t.Logf("figure: dev agent start -> hostpath 1/1 healthy in %s", time.Since(started).Round(time.Millisecond))

	cancel()
	select {
	case code := <-exit:
		must.EqOp(t, 0, code, must.Sprint(logs.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("dev agent did not stop after its context ended")
	}
}
