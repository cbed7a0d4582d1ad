package csitest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// MockDriverEnv names an environment variable that, when set, is the path
// of a mock driver binary to use instead of <repo>/.tools/mock-driver.
const MockDriverEnv = "BERTH_MOCK_DRIVER"

const mockDriverPkg = "github.com/kubernetes-csi/csi-test/v4/cmd/mock-driver"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// MockDriverPath returns the path of the mock CSI driver binary,
// <repo>/.tools/mock-driver (what `make mock-driver` builds). If it is
// missing, it builds it from the pinned module in
// internal/tools/mockdriver, under a file lock so that test binaries
// building at once do not race, into a temp file renamed into place.
func MockDriverPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(MockDriverEnv); p != "" {
		return p
	}
	buildOnce.Do(func() { buildPath, buildErr = ensureMockDriver() })
	if buildErr != nil {
		t.Fatalf("csitest: mock driver: %v", buildErr)
	}
	return buildPath
}

func ensureMockDriver() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	tools := filepath.Join(root, ".tools")
	bin := filepath.Join(tools, "mock-driver")
	if isExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(tools, ".mock-driver.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too

	if isExecutable(bin) { // another process built it while we waited
		return bin, nil
	}
	tmp, err := os.CreateTemp(tools, ".mock-driver-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())

	cmd := exec.Command("go", "build", "-o", tmp.Name(), mockDriverPkg)
	cmd.Dir = filepath.Join(root, "internal", "tools", "mockdriver")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", mockDriverPkg, cmd.Dir, err, out.String())
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// repoRoot finds the module root: from this source file's location when
// the source is on disk, else from `go env GOMOD`.
func repoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("cannot find the berth module root")
	}
	return filepath.Dir(mod), nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
