package rpc

import (
	"sync"
	"time"
)

// A flood of refused connections or dropped requests must not flood the log
// too: at most refusalLogBurst lines per refusalLogWindow for each kind.
const (
	refusalLogWindow = time.Second
	refusalLogBurst  = 10
)

// logLimiter allows refusalLogBurst log lines per refusalLogWindow; the
// next line allowed says how many were not. Its zero value is ready, and it
// is safe for concurrent use.
type logLimiter struct {
	mu       sync.Mutex
	window   time.Time
	logged   int
	unlogged int
}

// allow reports whether a line may be logged now, and how many were left
// out since the last one was, which that line should say.
func (l *logLimiter) allow() (unlogged int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.window) >= refusalLogWindow {
		l.window, l.logged = now, 0
	}
	if l.logged >= refusalLogBurst {
		l.unlogged++
		return 0, false
	}
	l.logged++
	unlogged, l.unlogged = l.unlogged, 0
	return unlogged, true
}
