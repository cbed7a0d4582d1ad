package keyedsem

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

func TestSemaphores_LimitPerKey(t *testing.T) {
	var s Semaphores[string]
	s.Limit = 2
	ctx := context.Background()
	r1, err := s.Acquire(ctx, "a")
	must.NoError(t, err)
	r2, err := s.Acquire(ctx, "a")
	must.NoError(t, err)
	rb, err := s.Acquire(ctx, "b")
	must.NoError(t, err, must.Sprint("another key has its own turns"))

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(short, "a")
	must.ErrorIs(t, err, context.DeadlineExceeded, must.Sprint("a third holder of a waits"))
	held, users := s.Usage("a")
	must.Eq(t, 2, held)
	must.Eq(t, 2, users, must.Sprint("the waiter that gave up is gone"))

	got := make(chan func(), 1)
	go func() {
		r, err := s.Acquire(ctx, "a")
		if err == nil {
			got <- r
		}
	}()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		_, users := s.Usage("a")
		return users == 3
	}), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
	r1()
	r3 := <-got
	r2()
	r3()
	rb()
	must.Zero(t, s.Len(), must.Sprint("no semaphore is left behind"))
}

func TestSemaphores_ZeroLimitIsOne(t *testing.T) {
	var s Semaphores[int]
	release, err := s.Acquire(context.Background(), 7)
	must.NoError(t, err)
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(short, 7)
	must.ErrorIs(t, err, context.DeadlineExceeded)
	release()
	release, err = s.Acquire(context.Background(), 7)
	must.NoError(t, err)
	release()
	must.Zero(t, s.Len())
}
