package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
	"google.golang.org/grpc/codes"
)

// runMainEnv makes the test binary act as the plugin binary, so process
// tests run the real main without a separate build.
const runMainEnv = "BERTH_HOSTPATH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// startProcess runs the plugin as a child process.
func startProcess(t *testing.T, endpoint string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "CSI_ENDPOINT="+endpoint)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &stderr
}

// waitExit waits for cmd to end and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the plugin did not exit; stderr:\n%s", stderr)
	}
	return cmd.ProcessState.ExitCode()
}

func TestProcess_ServesAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "csi.sock")
	root := filepath.Join(dir, "root")

	// a stale socket, as left by a plugin that was killed
	ln, err := net.Listen("unix", sock)
	must.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	must.NoError(t, ln.Close())

	cmd, stderr := startProcess(t, "unix://"+sock, "-root", root, "-node-id", "n1", "-log-level", "debug")
	ids := csi.NewIdentityClient(dial(t, sock))
	must.Wait(t, wait.InitialSuccess(wait.ErrorFunc(func() error {
		_, err := ids.Probe(context.Background(), &csi.ProbeRequest{})
		return err
	}), wait.Timeout(15*time.Second), wait.Gap(20*time.Millisecond)))

	info, err := ids.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	must.NoError(t, err)
	must.Eq(t, defaultName, info.Name)
	must.Eq(t, version, info.VendorVersion)

	// a second plugin on the same socket refuses to start
	second, stderr2 := startProcess(t, "unix://"+sock, "-root", filepath.Join(dir, "root2"))
	must.Eq(t, 1, waitExit(t, second, stderr2))
	must.StrContains(t, stderr2.String(), "another process is serving on it")

	must.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	must.Eq(t, 0, waitExit(t, cmd, stderr), must.Sprintf("stderr:\n%s", stderr))
	_, err = os.Stat(sock)
	must.ErrorIs(t, err, os.ErrNotExist, must.Sprint("the socket is removed on stop"))
	must.StrContains(t, stderr.String(), "stopping")
	_, err = os.Stat(filepath.Join(root, stateFileName)) // no change was made, so no state file yet
	must.ErrorIs(t, err, os.ErrNotExist)
}

func TestProbe_RootGone(t *testing.T) {
	cfg := testConfig(t)
	ids, _, _ := services(newTestDriver(t, cfg))
	resp, err := ids.Probe(context.Background(), &csi.ProbeRequest{})
	must.NoError(t, err)
	must.True(t, resp.Ready.Value)

	must.NoError(t, os.RemoveAll(cfg.Root))
	_, err = ids.Probe(context.Background(), &csi.ProbeRequest{})
	mustCode(t, err, codes.FailedPrecondition, "root directory "+cfg.Root+" is not usable")

	must.NoError(t, os.WriteFile(cfg.Root, nil, 0o600))
	_, err = ids.Probe(context.Background(), &csi.ProbeRequest{})
	mustCode(t, err, codes.FailedPrecondition, "is not a directory")
}

func TestListen_RefusesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-a-socket")
	must.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
	_, err := listen(path)
	must.ErrorContains(t, err, "exists and is not a socket")
	data, err := os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "keep me", string(data))
}
