package agentproc

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Setup is what a process harness starts from: bin/berth built once into
// a temp dir, an HTTP transport with idle connections for its callers,
// and a log dir under os.TempDir named by prefix, which outlives the test
// (the test logs where it is, and, when it failed, the last lines of each
// agent's log that agents returns by then).
func Setup(t testing.TB, prefix string, idleConns int, agents func() []*Agent) (bin string, transport *http.Transport, logDir string) {
	t.Helper()
	transport = http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = idleConns, max(idleConns/4, 1)
	t.Cleanup(transport.CloseIdleConnections)

	bin = filepath.Join(t.TempDir(), "berth")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/berth-csi/berth/cmd/berth").CombinedOutput(); err != nil {
		t.Fatalf("%s: build berth (go build ./cmd/berth must pass first): %v\n%s", prefix, err, out)
	}
	logDir, err := os.MkdirTemp("", "berth-"+prefix+"-logs-")
	if err != nil {
		t.Fatalf("%s: make a log dir under %s: %v", prefix, os.TempDir(), err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, a := range agents() {
				t.Logf("--- %s (last 40 lines of %s) ---\n%s", a.Name, a.Proc.LogPath, a.Proc.LogTail(40))
			}
		}
		t.Logf("%s: process logs kept in %s", prefix, logDir)
	})
	return bin, transport, logDir
}
