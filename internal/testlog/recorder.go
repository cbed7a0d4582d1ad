package testlog

import (
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Recorder keeps every line its loggers write, at every level, so a test
// can assert on what was logged (that no secret ever was, say).
type Recorder struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write records p.
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Write(p)
}

// String is everything recorded so far.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// Logger returns a trace-level logger named name that writes to r.
func (r *Recorder) Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Trace, Output: r, TimeFormat: "15:04:05.000"})
}
