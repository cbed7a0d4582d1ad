package csitest

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// maxSocketDir keeps room under the kernel's 108-byte sun_path limit for
// the longest socket name this package uses.
const maxSocketDir = 90

// SocketDir returns a directory for unix sockets, removed when the test
// ends: t.TempDir() when its path is short enough for a socket path, else
// a shorter directory under the system temp dir (long test names make
// t.TempDir() paths too long for sun_path).
func SocketDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) <= maxSocketDir {
		return dir
	}
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatalf("csitest: socket dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ServeClosingSocket listens on a unix socket that accepts connections and
// closes them at once: something is there, but it is not a CSI plugin.
// It returns the socket path; the listener stops when the test ends.
func ServeClosingSocket(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(SocketDir(t), "closing.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("csitest: listen %s: %v", sock, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return // the listener was closed by the cleanup below
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return sock
}

// ServeHTTPSocket serves plain HTTP/1.1 on a unix socket, answering every
// request with 404: a server that speaks a protocol, but not gRPC. It
// returns the socket path; the server stops when the test ends.
func ServeHTTPSocket(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(SocketDir(t), "http.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("csitest: listen %s: %v", sock, err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Logf("csitest: http server on %s: %v", sock, err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return sock
}

// WriteHooks writes a mock driver hooks file (YAML; see the driver's
// hooks-howto.md) into the test's temp dir and returns its path.
func WriteHooks(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatalf("csitest: hooks file: %v", err)
	}
	return path
}
