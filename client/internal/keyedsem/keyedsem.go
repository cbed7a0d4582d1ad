package keyedsem

import (
	"context"
	"sync"
)

// Semaphores admits at most Limit holders per key at once (1 if Limit is
// not positive). The zero value is ready to use.
type Semaphores[K comparable] struct {
	Limit int

	mu   sync.Mutex
	sems map[K]*semaphore
}

type semaphore struct {
	slots chan struct{} // a token in it is a holder
	users int           // holders and waiters
}

// Acquire waits until it holds a turn at key, or ctx ends; release gives
// the turn back.
func (s *Semaphores[K]) Acquire(ctx context.Context, key K) (release func(), err error) {
	s.mu.Lock()
	if s.sems == nil {
		s.sems = map[K]*semaphore{}
	}
	sem := s.sems[key]
	if sem == nil {
		sem = &semaphore{slots: make(chan struct{}, max(s.Limit, 1))}
		s.sems[key] = sem
	}
	sem.users++
	s.mu.Unlock()

	done := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if sem.users--; sem.users == 0 {
			delete(s.sems, key)
		}
	}
	select {
	case sem.slots <- struct{}{}:
		return func() {
			<-sem.slots
			done()
		}, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// Usage reports how many hold a turn at key, and how many hold or wait
// for one.
func (s *Semaphores[K]) Usage(key K) (held, users int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sem := s.sems[key]; sem != nil {
		return len(sem.slots), sem.users
	}
	return 0, 0
}

// Len is how many keys have a holder or a waiter.
func (s *Semaphores[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sems)
}
