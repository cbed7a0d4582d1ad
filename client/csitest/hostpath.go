package csitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// HostpathName is berth-hostpath's default plugin name (its Provider).
const HostpathName = "hostpath.berth.dev"

// StartHostpath builds berth-hostpath (the go build cache makes repeats
// cheap) and starts it on a socket in a fresh temp dir, with its volumes
// under another. It has the mock driver's Kill, Pause, Restart and Stop;
// a restart keeps its volumes.
func StartHostpath(t testing.TB, extraArgs ...string) *Plugin {
	t.Helper()
	bin := HostpathBinary(t)
	dir := SocketDir(t)
	p := &Plugin{
		Name:    HostpathName,
		Socket:  filepath.Join(dir, "csi.sock"),
		LogPath: filepath.Join(t.TempDir(), "berth-hostpath.log"),
		Root:    t.TempDir(),
		t:       t,
		bin:     bin,
	}
	p.args = append([]string{"-endpoint", "unix://" + p.Socket, "-root", p.Root, "-node-id", "hostpath-node"}, extraArgs...)
	t.Cleanup(p.cleanup)
	p.start()
	return p
}

// HostpathBinary builds berth-hostpath into a temp dir (the go build cache
// makes repeats cheap) and returns its path.
func HostpathBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "berth-hostpath")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/berth-csi/berth/cmd/berth-hostpath")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build makes it: an image FROM scratch holds it
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("csitest: build berth-hostpath: %v\n%s", err, out)
	}
	return bin
}
