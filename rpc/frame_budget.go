package rpc

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// The frame budget bounds the memory a Server's unfinished requests may
// hold together, over every connection and stream it serves: a request
// reserves its declared length (prefix, header and body) once its length
// prefix is read, before the rest is, and gives it back when its body has
// been decoded into the method's args, or when the read fails. Without it,
// every connection could hold a MaxFrameSize body half sent (issue 26: 30
// connections took an agent from 99 MB to 863 MB).
const (
	// maxDefaultFrameBudget is the default budget when the process has
	// no memory limit (GOMEMLIMIT): sixteen MaxFrameSize requests arriving
	// at once, far more than honest peers send together.
	maxDefaultFrameBudget = 256 << 20
	// minFrameBudget is the smallest budget: one MaxFrameSize request
	// must always fit besides the room kept for small ones.
	minFrameBudget = 2 * MaxFrameSize
	// smallFrameLen: a request of at most this length may use the whole
	// budget; larger ones leave the last smallFrameShare of it free, so
	// that a flood of large declarations never delays an ordinary call.
	smallFrameLen   = 64 << 10
	smallFrameShare = 8
)

// DefaultFrameBudget is the budget a Server takes when not given one:
// 256 MiB, or a quarter of the Go memory limit (GOMEMLIMIT)
// when that is lower, never under 32 MiB (two MaxFrameSize requests).
func DefaultFrameBudget() int64 {
	budget := int64(maxDefaultFrameBudget)
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit != math.MaxInt64 {
		budget = min(budget, limit/4)
	}
	return max(budget, minFrameBudget)
}

// WithFrameBudget bounds the bytes the requests a Server is still reading
// may hold together, over all its connections and streams; n <= 0 removes
// the bound, and a bound under 32 MiB is raised to it so that one
// MaxFrameSize request always fits. A request that finds no room waits for
// it as long as a request may stall (WithFrameStallTimeout), then costs its
// connection (its stream, over a session). The default is
// DefaultFrameBudget.
func WithFrameBudget(n int64) ServerOption {
	return func(s *Server) {
		if n <= 0 {
			s.budget = newFrameBudget(0)
			return
		}
		s.budget = newFrameBudget(max(n, minFrameBudget))
	}
}

// frameBudget counts the bytes reserved by requests being read. It is safe
// for concurrent use.
type frameBudget struct {
	limit int64 // 0: no limit
	// largeLimit is what may be held when a request over smallFrameLen
	// reserves.
	largeLimit int64

	mu   sync.Mutex
	held int64
	peak int64 // the most ever held: for tests and the operator's eye
	// freed is closed, and replaced, whenever bytes are given back.
	freed chan struct{}
	// waiting counts the requests waiting for room.
	waiting atomic.Int64
}

func newFrameBudget(limit int64) *frameBudget {
	return &frameBudget{
		limit:      limit,
		largeLimit: limit - limit/smallFrameShare,
		freed:      make(chan struct{}),
	}
}

// reserve takes n bytes for one request, waiting up to wait for them when
// they are not free. The returned release gives them back; calling it again
// does nothing. It fails when wait passes (errFrameBudget) or ctx ends.
func (b *frameBudget) reserve(ctx context.Context, n int64, wait time.Duration) (release func(), err error) {
	if b.limit == 0 {
		return func() {}, nil
	}
	var timeout <-chan time.Time
	for {
		freed, ok := b.tryReserve(n)
		if ok {
			var once sync.Once
			return func() { once.Do(func() { b.release(n) }) }, nil
		}
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
			b.waiting.Add(1)
			defer b.waiting.Add(-1)
		}
		select {
		case <-freed:
		case <-timeout:
			held, limit := b.usage()
			return nil, fmt.Errorf("%w: a request of %d bytes found no room within %s: %d of %d bytes held by requests being read",
				errFrameBudget, n, wait, held, limit)
		case <-ctx.Done():
			return nil, fmt.Errorf("rpc: waiting for room for a request of %d bytes: %w", n, ctx.Err())
		}
	}
}

// tryReserve takes n bytes if they are free; if not, it returns the channel
// closed when some are given back.
func (b *frameBudget) tryReserve(n int64) (freed <-chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.limit
	if n > smallFrameLen {
		limit = b.largeLimit
	}
	if b.held+n > limit {
		return b.freed, false
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return nil, true
}

// release gives n bytes back and wakes the requests waiting for room.
func (b *frameBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// usage returns the bytes held now and the limit (0: none).
func (b *frameBudget) usage() (held, limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.limit
}

// peakHeld returns the most bytes ever held at once.
func (b *frameBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
