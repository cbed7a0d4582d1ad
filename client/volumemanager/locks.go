package volumemanager

import (
	"context"
	"sync"
)

// keyedLocks is one lock per volume, waited for under a context. A lock
// exists only while someone holds or waits for it.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[volumeKey]*keyedLock
}

type keyedLock struct {
	held  chan struct{} // a token in it means held
	users int           // holders and waiters
}

// lock waits until it holds key's lock or ctx ends; unlock releases it.
func (l *keyedLocks) lock(ctx context.Context, key volumeKey) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[volumeKey]*keyedLock{}
	}
	k := l.locks[key]
	if k == nil {
		k = &keyedLock{held: make(chan struct{}, 1)}
		l.locks[key] = k
	}
	k.users++
	l.mu.Unlock()

	done := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if k.users--; k.users == 0 {
			delete(l.locks, key)
		}
	}
	select {
	case k.held <- struct{}{}:
		return func() {
			<-k.held
			done()
		}, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// holders counts the locks held or waited for, for tests.
func (l *keyedLocks) holders() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
