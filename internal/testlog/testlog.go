package testlog

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// writer hands whole lines to t.Log until the test ends.
type writer struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(bytes.TrimSpace(p)), "\n"))
	}
	return len(p), nil
}

// Logger returns a logger named name that writes to t.Log. BERTH_TEST_LOG
// sets the level (default warn, so passing tests stay quiet).
func Logger(t testing.TB, name string) hclog.Logger {
	w := &writer{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	level := hclog.LevelFromString(os.Getenv("BERTH_TEST_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: level, Output: w, TimeFormat: "15:04:05.000"})
}
